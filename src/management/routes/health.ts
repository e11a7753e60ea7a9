import type { ManagementDeps } from '../context.ts';
import { route, type RouteDef } from '../route-def.ts';

export function healthRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/health',
      async handle() {
        const probe = async (check: () => Promise<unknown>) => {
          try {
            await check();
            return 'ok';
          } catch {
            return 'failing';
          }
        };
        const stores = {
          // Reads are served from memory: a disk that refuses writes shows only in the last write.
          config: deps.store.writesFailing() ? 'failing' : await probe(() => deps.store.settings.get()),
          logs: await probe(() => deps.logs.list({}, { limit: 1 })),
        };
        const memory = process.memoryUsage();
        return {
          data: {
            status: Object.values(stores).every((s) => s === 'ok') ? 'ok' : 'degraded',
            uptime_seconds: Math.floor((deps.clock() - deps.startedAt) / 1000),
            stores,
            memory: { rss_bytes: memory.rss, heap_used_bytes: memory.heapUsed },
            request_logs: { buffered: 0, dropped: 0, buffered_bytes: 0, bodies_dropped: 0, ...deps.requestLogHealth?.() },
          },
        };
      },
    }),
  ];
}
