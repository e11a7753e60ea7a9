import type { RouteInspectBody } from '../../generated/management/route-inspect.ts';
import type { AccessKeyRecord } from '../../store/records.ts';
import type { ManagementDeps } from '../context.ts';
import { answered } from '../log-store-read.ts';
import { inspectRoute } from '../inspect/inspect-route.ts';
import { route, type RouteDef } from '../route-def.ts';
import inspectSchema from '../schemas/route-inspect.json' with { type: 'json' };

export function routeInspectRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route<RouteInspectBody>({
      method: 'POST',
      path: '/route/inspect',
      body: inspectSchema,
      async handle(_ctx, body) {
        const { store } = deps;
        const meter = deps.quotaOf;
        const quotaOf = meter && ((key: AccessKeyRecord, now: number) => answered(meter(key, now)));
        return { data: await inspectRoute({ groups: store.groups, credentials: store.credentials, accessKeys: store.accessKeys, logs: deps.logs, ...(quotaOf ? { quotaOf } : {}), now: deps.clock() }, body) };
      },
    }),
  ];
}
