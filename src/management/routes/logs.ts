import { notFound, validationFailed } from '../../http/api-error.ts';
import { definedOnly } from '../../store/defined-only.ts';
import type { LogFilter } from '../../store/log-store.ts';
import type { ManagementDeps } from '../context.ts';
import { queryCursor, queryEnum, queryInt, queryString, queryTimeRange, stringParam } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';
import { logVisibleTo, scopedKeyId } from '../scope.ts';

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'error'] as const;
/** Every error code the gateway records has this shape (`upstream_stream_broken`, `upstream_429`). */
const ERROR_CODE = /^[a-z0-9_]{1,64}$/;

export function logRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/logs',
      query: ['from', 'to', 'model', 'status', 'status_class', 'error_code', 'group_id', 'access_key_id', 'limit', 'cursor'],
      async handle(ctx) {
        const filter: LogFilter = {
          ...queryTimeRange(ctx),
          model: queryString(ctx, 'model'),
          status: queryInt(ctx, 'status', 100, 599),
          status_class: queryEnum(ctx, 'status_class', STATUS_CLASSES),
          error_code: errorCodeParam(queryString(ctx, 'error_code')),
          group_id: queryInt(ctx, 'group_id', 1, Number.MAX_SAFE_INTEGER)?.toString(),
          // An AccessKey sees only the requests it sent, whatever it asks for.
          access_key_id: scopedKeyId(ctx.state.principal) ?? queryInt(ctx, 'access_key_id', 1, Number.MAX_SAFE_INTEGER),
        };
        const page = { limit: queryInt(ctx, 'limit', 1, 500) ?? 50, cursor: queryCursor(ctx, 'cursor') };
        return { data: await deps.logs.list(definedOnly(filter), page.cursor === undefined ? { limit: page.limit } : page) };
      },
    }),
    route({
      method: 'GET',
      path: '/logs/:request_id',
      async handle(ctx) {
        const id = stringParam(ctx, 'request_id');
        const record = await deps.logs.get(id);
        if (!record || !logVisibleTo(record, ctx.state.principal)) throw notFound('log', id);
        return { data: record };
      },
    }),
  ];
}

function errorCodeParam(raw: string | undefined): string | undefined {
  if (raw !== undefined && !ERROR_CODE.test(raw)) throw validationFailed('error_code', 'invalid_value', { pattern: ERROR_CODE.source });
  return raw;
}
