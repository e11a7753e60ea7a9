import { MANIFEST_DIGEST } from '../../generated/index.ts';
import type { ManagementDeps } from '../context.ts';
import { queryEnum } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';
import { UpdateChecker } from '../update-check.ts';

export function systemRoutes(deps: ManagementDeps): RouteDef[] {
  const updates = new UpdateChecker(deps.fetch, deps.clock, deps.version);
  return [
    route({
      method: 'GET',
      path: '/system',
      query: ['refresh'],
      async handle(ctx) {
        const refresh = queryEnum(ctx, 'refresh', ['true', 'false'] as const) === 'true';
        const settings = await deps.store.settings.get();
        return {
          data: {
            name: 'switchyard',
            version: deps.version,
            manifest_digest: MANIFEST_DIGEST,
            node: process.version,
            platform: `${process.platform}-${process.arch}`,
            started_at: new Date(deps.startedAt).toISOString(),
            update: await updates.check(settings.update_feed_url, refresh),
          },
        };
      },
    }),
  ];
}
