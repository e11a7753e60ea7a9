import { route, type RouteDef } from '../route-def.ts';

export function authSessionRoutes(): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/auth/session',
      async handle(ctx) {
        const p = ctx.state.principal;
        return { data: p.kind === 'auth_key' ? { principal: 'auth_key' } : { principal: 'access_key', access_key: p.accessKey } };
      },
    }),
  ];
}
