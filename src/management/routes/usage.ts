import { validationFailed } from '../../http/api-error.ts';
import { definedOnly } from '../../store/defined-only.ts';
import type { UsageQuery } from '../../store/log-store.ts';
import type { ManagementDeps } from '../context.ts';
import { queryEnum, queryInt, queryString, queryTimeRange } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';
import { scopedKeyId } from '../scope.ts';
import { roundCost, withRoundedCost } from '../../usage/index.ts';

const DIMENSIONS = ['key', 'group', 'model'] as const;

/**
 * Rows one /api/usage answer may hold: range × bucket × group_by is otherwise unbounded, and a
 * few hundred thousand rows cost the worker, the main thread and the heap far more than a
 * caller can use. More is refused rather than cut, so that no total is silently partial.
 */
export const MAX_USAGE_ROWS = 10_000;

export function usageRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/usage',
      query: ['from', 'to', 'bucket', 'group_by', 'model', 'group_id', 'access_key_id', 'utc_offset_minutes'],
      async handle(ctx) {
        const groupBy = (queryString(ctx, 'group_by') ?? '').split(',').filter((d) => d !== '');
        for (const [i, d] of groupBy.entries()) {
          if (!(DIMENSIONS as readonly string[]).includes(d)) throw validationFailed('group_by', 'invalid_value', { allowed: DIMENSIONS });
          if (groupBy.indexOf(d) !== i) throw validationFailed('group_by', 'repeated', { dimension: d });
        }
        const query: UsageQuery = definedOnly({
          ...queryTimeRange(ctx),
          bucket: queryEnum(ctx, 'bucket', ['hour', 'day'] as const) ?? 'day',
          group_by: groupBy as UsageQuery['group_by'],
          model: queryString(ctx, 'model'),
          group_id: queryInt(ctx, 'group_id', 1, Number.MAX_SAFE_INTEGER)?.toString(),
          access_key_id: scopedKeyId(ctx.state.principal) ?? queryInt(ctx, 'access_key_id', 1, Number.MAX_SAFE_INTEGER),
          utc_offset_minutes: queryInt(ctx, 'utc_offset_minutes', -840, 840),
          max_rows: MAX_USAGE_ROWS,
        });
        const found = await deps.logs.usage(query);
        if (found.length > MAX_USAGE_ROWS) {
          throw validationFailed('from', 'too_many_rows', {
            max_rows: MAX_USAGE_ROWS,
            detail: `more than ${MAX_USAGE_ROWS} rows: narrow from/to, use bucket=day, or group_by fewer dimensions`,
          });
        }
        const rows = found.map(withRoundedCost);
        const totals = { requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost: 0 };
        for (const r of rows) {
          for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += r[k];
          // Kept on the 1e-10 USD grid at each row, as the store's sums are: no drift over many rows.
          totals.cost = roundCost(totals.cost);
        }
        return { data: { bucket: query.bucket, group_by: query.group_by, totals, rows } };
      },
    }),
  ];
}
