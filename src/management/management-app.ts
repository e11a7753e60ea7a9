import type { Middleware } from 'koa';
import { authenticate } from '../auth/authenticate.ts';
import type { Lockout } from '../auth/lockout.ts';
import { errorMiddleware } from '../http/error-middleware.ts';
import { runChain } from '../http/run-chain.ts';
import { routeFallback } from '../http/route-fallback.ts';
import { allRoutes } from './all-routes.ts';
import { allowedMethods, buildManagementRouter } from './build-router.ts';
import { isManagementPath } from './management-path.ts';
import type { ManagementDeps } from './context.ts';
import { IdempotencyGuard } from './idempotency.ts';
import { answered, logReadsAnswered } from './log-store-read.ts';

export interface ManagementApp {
  /** Handles /api and everything under it; passes other paths on. */
  middleware: Middleware;
  /** Method and path pattern of every registered operation, read from the router. */
  routes(): Array<{ method: string; path: string }>;
}

/**
 * The management plane: one error middleware (envelope, language), then authentication and
 * lockout, then the router, with unknown paths and methods answered 404 / 405.
 */
export function createManagementApp(deps: ManagementDeps, auth: { authKey: string; lockout: Lockout }): ManagementApp {
  const routes = allRoutes({ ...deps, logs: logReadsAnswered(deps.logs), quotaOf: (key, now) => answered(deps.quotaOf(key, now)) });
  const router = buildManagementRouter(routes, deps.validator, new IdempotencyGuard(deps.store.idempotency, deps.clock));
  const chain = runChain([
    errorMiddleware(deps.log),
    async (ctx, next) => {
      // Management answers carry configuration and sometimes secrets; nothing may cache them.
      ctx.set('Cache-Control', 'no-store');
      await next();
    },
    authenticate({
      authKey: auth.authKey,
      accessKeys: deps.store.accessKeys,
      lockout: auth.lockout,
      clock: deps.clock,
      trustedProxies: async () => (await deps.store.settings.get()).trusted_proxies,
    }),
    routeFallback((path) => allowedMethods(router, path)),
    router.routes() as Middleware,
  ]);
  return {
    middleware: async (ctx, next) => {
      if (!isManagementPath(ctx.path)) return next();
      await chain(ctx);
    },
    routes: () =>
      router.stack
        .filter((layer) => layer.methods.length > 0)
        .flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((method) => ({ method, path: String(layer.path) }))),
  };
}
