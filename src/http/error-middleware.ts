import type { Middleware } from 'koa';
import { ApiError } from './api-error.ts';
import { failureEnvelope } from './envelope.ts';
import type { ErrorCode } from './error-codes.ts';
import { pickLocale } from './i18n.ts';
import { closeUnlessDrained } from './drain-after-answer.ts';
import { isConnectionGoneError } from './connection-gone-error.ts';
import { ConfigStoreUnavailableError } from '../store/config-store-unavailable-error.ts';

export type ServerLog = (line: string) => void;

// Errors thrown by Koa or the router (http-errors) carry only a status.
const STATUS_CODES: Readonly<Record<number, ErrorCode>> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'ROUTE_NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'REQUEST_TOO_LARGE',
};

/**
 * The one error middleware of the management plane: every failure becomes the failure
 * envelope in the caller's language. Unknown throws are logged here and answered 500
 * without any detail, so no stack or message of an internal error reaches a client. A client
 * that left mid-body (or whose silent body ended its connection) is neither logged nor answered.
 */
export function errorMiddleware(log: ServerLog): Middleware {
  return async (ctx, next) => {
    const locale = pickLocale(ctx.get('Accept-Language') || undefined);
    ctx.state.locale = locale;
    try {
      await next();
    } catch (err) {
      if (isConnectionGoneError(err, ctx.req)) return;
      const apiError = toApiError(err);
      if (apiError.code === 'INTERNAL_SERVER_ERROR') {
        log(`management ${ctx.method} ${ctx.path} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      }
      ctx.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
      if (closeUnlessDrained(ctx.res)) ctx.set('Connection', 'close');
      ctx.body = failureEnvelope(locale, apiError.code, apiError.data);
    }
  };
}

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ConfigStoreUnavailableError) return new ApiError('CONFIG_STORE_UNAVAILABLE', { cause: err });
  const status = typeof err === 'object' && err !== null && 'status' in err ? Number((err as { status: unknown }).status) : NaN;
  const code = STATUS_CODES[status];
  return new ApiError(code ?? 'INTERNAL_SERVER_ERROR');
}
