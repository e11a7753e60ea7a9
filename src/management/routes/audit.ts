import type { ManagementDeps } from '../context.ts';
import { onlyQuery, queryInt } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';

/** The record of reveals and downloads of secrets, newest first. */
export function auditRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/audit',
      async handle(ctx) {
        onlyQuery(ctx, ['limit']);
        return { data: await deps.store.audit.list(queryInt(ctx, 'limit', 1, 1000) ?? 100) };
      },
    }),
  ];
}
