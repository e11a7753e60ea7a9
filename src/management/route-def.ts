import type { ManagementContext } from './context.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface FileResult {
  file: { contentType: string; filename: string; body: string };
}

export interface DataResult {
  status?: number;
  data?: unknown;
  /** What a replay of this result shows instead of `data` (a created secret appears only once). */
  replayData?: unknown;
}

export type RouteResult = DataResult | FileResult;

/** One management operation: where it is, what body it takes, and what it does. */
export interface RouteDef<B = unknown> {
  method: HttpMethod;
  /** Path under /api, in @koa/router syntax. */
  path: string;
  /** JSON Schema of the body; without one the operation has the empty-object contract. */
  body?: object;
  bodyLimit?: number;
  /** Query parameters it takes, each at most once; any other is refused before the body is read (default none). */
  query?: readonly string[];
  /** Requires an Idempotency-Key (spec section 4 table). */
  idempotent?: boolean;
  handle(ctx: ManagementContext, body: B): Promise<RouteResult>;
}

export function route<B = Record<string, never>>(def: RouteDef<B>): RouteDef<B> {
  return def;
}
