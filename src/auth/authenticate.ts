import type { Middleware } from 'koa';
import { ApiError } from '../http/api-error.ts';
import type { Clock } from '../store/clock.ts';
import type { Lockout } from './lockout.ts';
import { peerAddress } from './peer-address.ts';
import { resolvePrincipal, type AccessKeyFinder } from './principal.ts';

export interface AuthenticateOptions {
  authKey: string;
  accessKeys: AccessKeyFinder;
  lockout: Lockout;
  clock: Clock;
  /** Read per request so that a settings change applies at once. */
  trustedProxies: () => Promise<readonly string[]>;
}

const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * Management authentication with the lockout of spec section 3: a locked peer gets 429
 * before its token is looked at; any presented Authorization that is neither the AUTH_KEY nor
 * a usable AccessKey counts as a failure; a success with the AUTH_KEY clears the count.
 * A request without Authorization is 401 and not counted (it guesses nothing).
 */
export function authenticate(options: AuthenticateOptions): Middleware {
  const { lockout } = options;
  return async (ctx, next) => {
    const peer = peerAddress(ctx.req.socket.remoteAddress, ctx.get('X-Forwarded-For') || undefined, await options.trustedProxies());
    ctx.state.peer = peer;
    const before = lockout.status(peer);
    if (before.locked) throw locked(before.retryAfterSeconds);
    const header = ctx.get('Authorization');
    if (header === '') throw new ApiError('UNAUTHORIZED');
    const token = BEARER.exec(header)?.[1];
    const principal = token === undefined ? undefined : await resolvePrincipal(token, options.authKey, options.accessKeys, options.clock());
    if (!principal) {
      const after = lockout.recordFailure(peer);
      // The fifth failure already answers as locked, so the client learns it at once.
      if (after.locked) throw locked(after.retryAfterSeconds);
      throw new ApiError('UNAUTHORIZED');
    }
    if (principal.kind === 'auth_key') lockout.clear(peer);
    ctx.state.principal = principal;
    await next();
  };
}

function locked(retryAfterSeconds: number): ApiError {
  return new ApiError('AUTH_LOCKED', { data: { retry_after_seconds: retryAfterSeconds }, headers: { 'Retry-After': String(retryAfterSeconds) } });
}
