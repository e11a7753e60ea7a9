import Router from '@koa/router';
import { accessKeyMayCall } from '../auth/access-key-routes.ts';
import { ApiError } from '../http/api-error.ts';
import { successEnvelope } from '../http/envelope.ts';
import { isErrorCode } from '../http/error-codes.ts';
import { DEFAULT_BODY_LIMIT, readJsonObjectBody } from '../http/json-body.ts';
import type { SchemaValidator } from '../http/schema-validator.ts';
import type { StoredResult } from '../store/records.ts';
import type { ManagementContext, ManagementState } from './context.ts';
import { type Execution, type IdempotencyGuard, readIdempotencyKey, REPLAY_HEADER, requestFingerprint } from './idempotency.ts';
import { onlyQuery } from './params.ts';
import type { RouteDef, RouteResult } from './route-def.ts';
import emptyObjectSchema from './schemas/empty-object.json' with { type: 'json' };

export const API_PREFIX = '/api';

/**
 * Registers every operation on one router under /api. Each route runs, in order:
 * AccessKey allow-list, the query against the parameters the route declares (here, so that no
 * route can forget it, and before any lookup), Idempotency-Key header, strict JSON body +
 * schema, then the operation (once per Idempotency-Key when the operation is marked).
 */
export function buildManagementRouter(routes: readonly RouteDef[], validator: SchemaValidator, idempotency: IdempotencyGuard): Router<ManagementState> {
  const router = new Router<ManagementState>({ prefix: API_PREFIX, exclusive: 'specificity' });
  for (const def of routes) {
    const pattern = `${API_PREFIX}${def.path}`;
    const validate = validator.compile<unknown>(def.body ?? emptyObjectSchema);
    router.register(def.path, [def.method], async (ctx: ManagementContext) => {
      const principal = ctx.state.principal;
      if (principal.kind === 'access_key' && !accessKeyMayCall(ctx.method, pattern)) throw new ApiError('FORBIDDEN');
      onlyQuery(ctx, def.query ?? []);
      const key = def.idempotent ? readIdempotencyKey(ctx.req) : undefined;
      const body = validate((await readJsonObjectBody(ctx.req, def.bodyLimit ?? DEFAULT_BODY_LIMIT)) ?? {});
      if (key === undefined) {
        render(ctx, await def.handle(ctx, body));
        return;
      }
      const fingerprint = requestFingerprint(def.method, pattern, { ...ctx.params }, body);
      const { result, replayed } = await idempotency.run(key, fingerprint, () => execute(def, ctx, body));
      if (replayed) ctx.set(REPLAY_HEADER, 'true');
      renderStored(ctx, result);
    });
  }
  return router;
}

/** Methods that some route accepts at `path` (a full path under /api); empty when none. */
export function allowedMethods(router: Router<ManagementState>, path: string): string[] {
  const layers = router.match(path, 'GET').path.filter((l) => l.methods.length > 0);
  return [...new Set(layers.flatMap((l) => l.methods))].sort();
}

async function execute(def: RouteDef, ctx: ManagementContext, body: unknown): Promise<Execution> {
  try {
    const out = await def.handle(ctx, body);
    if ('file' in out) throw new Error(`${def.method} ${def.path}: a file result cannot be idempotent`);
    const status = out.status ?? 200;
    return {
      result: { status, kind: 'success', data: out.data },
      forReplay: { status, kind: 'success', data: out.replayData ?? out.data },
    };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const failure: StoredResult = { status: err.status, kind: 'failure', code: err.code, data: err.data, headers: err.headers };
    return { result: failure, forReplay: failure };
  }
}

function render(ctx: ManagementContext, out: RouteResult): void {
  if ('file' in out) {
    ctx.status = 200;
    ctx.type = out.file.contentType;
    ctx.attachment(out.file.filename);
    ctx.body = out.file.body;
    return;
  }
  ctx.status = out.status ?? 200;
  ctx.body = successEnvelope(ctx.state.locale, out.data);
}

function renderStored(ctx: ManagementContext, result: StoredResult): void {
  if (result.kind === 'success') {
    ctx.status = result.status;
    ctx.body = successEnvelope(ctx.state.locale, result.data);
    return;
  }
  if (!isErrorCode(result.code)) throw new Error(`stored idempotent result has unknown code ${result.code}`);
  throw new ApiError(result.code, { data: result.data, headers: result.headers ?? {} });
}
