import type { ManagementDeps } from '../context.ts';
import { queryInt } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';

/** The record of reveals and downloads of secrets, newest first. */
export function auditRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/audit',
      query: ['limit'],
      async handle(ctx) {
        return { data: await deps.store.audit.list(queryInt(ctx, 'limit', 1, 1000) ?? 100) };
      },
    }),
  ];
}
