import type { RouteInspectBody } from '../../generated/management/route-inspect.ts';
import type { ManagementDeps } from '../context.ts';
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
        return { data: await inspectRoute({ groups: store.groups, credentials: store.credentials, accessKeys: store.accessKeys, quotaOf: deps.quotaOf, now: deps.clock() }, body) };
      },
    }),
  ];
}
