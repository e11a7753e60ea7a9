import type { Middleware } from 'koa';
import { ApiError } from './api-error.ts';

/** Methods that some route accepts at this path; empty when no route has the path. */
export type AllowedMethodsOf = (path: string) => string[];

/**
 * Runs after the router: a path no route has is 404 ROUTE_NOT_FOUND, a known path with
 * another method is 405 METHOD_NOT_ALLOWED with an Allow header.
 */
export function routeFallback(allowedMethodsOf: AllowedMethodsOf): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.body !== undefined || ctx.status !== 404) return;
    const allowed = allowedMethodsOf(ctx.path);
    if (allowed.length === 0) throw new ApiError('ROUTE_NOT_FOUND', { data: { path: ctx.path } });
    throw new ApiError('METHOD_NOT_ALLOWED', { data: { allowed }, headers: { Allow: allowed.join(', ') } });
  };
}
