import { refString, type DecodedLogBatch } from './decode-log-batch.ts';
import type { UsageTotals } from './log-store.ts';
import { FLAG_CLIENT_ABORTED } from './encode-log-batch.ts';
import { HOUR_MS, slotOf } from './time-slots.ts';
import { isErrorRecord } from './error-record.ts';
import { addCost, roundCost } from '../../usage/index.ts';

/** The sums usage_rollup keeps, named as its columns. */
export interface RollupSums {
  requests: number;
  /** Records isErrorRecord counts (error-record.ts). */
  errors: number;
  /** attempt_count > 0: what quotas count as a request. */
  forwarded: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost: number;
  client_aborted: number;
  duration_sum: number;
  ttfb_sum: number;
  /** Records with a ttfb: avg_ttfb_ms averages only those. */
  ttfb_count: number;
  s1xx: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
}

export const ROLLUP_SUM_COLUMNS = [
  'requests', 'errors', 'forwarded', 'input_tokens', 'output_tokens', 'cached_tokens', 'reasoning_tokens', 'cost',
  'client_aborted', 'duration_sum', 'ttfb_sum', 'ttfb_count', 's1xx', 's2xx', 's3xx', 's4xx', 's5xx',
] as const satisfies ReadonlyArray<keyof RollupSums>;

/** SQL rounding `expression` to the 1e-10 USD grid, as roundCost does (see addSums). */
export function roundCostSql(expression: string): string {
  return `ROUND(${expression}, 10)`;
}

/** One usage_rollup row (a minute) or usage_rollup_hour row (a UTC hour): its start and a combination of dimensions, with its sums. */
export interface RollupRow extends RollupSums {
  slot_start: number;
  access_key_id: number | null;
  group_id: string | null;
  external_model: string | null;
}

export function emptySums(): RollupSums {
  return {
    requests: 0, errors: 0, forwarded: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost: 0,
    client_aborted: 0, duration_sum: 0, ttfb_sum: 0, ttfb_count: 0, s1xx: 0, s2xx: 0, s3xx: 0, s4xx: 0, s5xx: 0,
  };
}

/** Adds record `i` of a batch; the status classes count as the former SQL did (a status outside 100..599 in none). */
export function addRecord(sums: RollupSums, batch: DecodedLogBatch, i: number): void {
  const status = batch.status[i]!;
  const ttfb = batch.ttfbMs[i]!;
  sums.requests++;
  if (isErrorRecord(status, refString(batch, batch.errorCodeRef[i]!))) sums.errors++;
  if (batch.attemptCount[i]! > 0) sums.forwarded++;
  sums.input_tokens += batch.inputTokens[i]!;
  sums.output_tokens += batch.outputTokens[i]!;
  sums.cached_tokens += batch.cachedTokens[i]!;
  sums.reasoning_tokens += batch.reasoningTokens[i]!;
  sums.cost = addCost(sums.cost, batch.cost[i]!);
  if ((batch.flags[i]! & FLAG_CLIENT_ABORTED) !== 0) sums.client_aborted++;
  sums.duration_sum += batch.durationMs[i]!;
  if (!Number.isNaN(ttfb)) {
    sums.ttfb_sum += ttfb;
    sums.ttfb_count++;
  }
  if (status >= 100 && status < 600) {
    if (status < 200) sums.s1xx++;
    else if (status < 300) sums.s2xx++;
    else if (status < 400) sums.s3xx++;
    else if (status < 500) sums.s4xx++;
    else sums.s5xx++;
  }
}

/** The sums a usage row or the statistics report. */
export function usageTotalsOf(sums: RollupSums): UsageTotals {
  const { requests, errors, input_tokens, output_tokens, cached_tokens, reasoning_tokens, cost } = sums;
  return { requests, errors, input_tokens, output_tokens, cached_tokens, reasoning_tokens, cost };
}

/**
 * Cost sums are kept on the 1e-10 USD grid each cost is on (roundCost), at every addition: a
 * plain float sum of a hundred thousand costs drifts a few 1e-10 from what was charged, so
 * /api/usage and a key's quota read from the rollups would part from the data plane's meter,
 * which rounds at every record.
 */
export function addSums(into: RollupSums, from: RollupSums): void {
  for (const column of ROLLUP_SUM_COLUMNS) into[column] += from[column];
  into.cost = roundCost(into.cost);
}

/** Rollup rows being built, one per slot and combination of dimensions. */
export class RollupTable {
  readonly rows: RollupRow[] = [];
  readonly #index = new Map<number, Map<number | null, Map<string | null, Map<string | null, RollupRow>>>>();
  /** The row of the previous record: records of a batch mostly share one. */
  #last: RollupRow | undefined;

  /** Adds the records of `batch` for which `include` holds (all when it is undefined). */
  addBatch(batch: DecodedLogBatch, include?: (i: number) => boolean): void {
    const { createdAt, accessKeyId, groupRef, modelRef } = batch;
    for (let i = 0; i < batch.count; i++) {
      if (include !== undefined && !include(i)) continue;
      const slot = slotOf(createdAt[i]!);
      const key = accessKeyId[i]!;
      const keyId = Number.isNaN(key) ? null : key;
      const group = refString(batch, groupRef[i]!);
      const model = refString(batch, modelRef[i]!);
      const last = this.#last;
      const row =
        last !== undefined && last.slot_start === slot && last.access_key_id === keyId && last.group_id === group && last.external_model === model
          ? last
          : this.#row(slot, keyId, group, model);
      this.#last = row;
      addRecord(row, batch, i);
    }
  }

  /** Adds `row`'s sums to the row of `slot` and `row`'s dimensions. */
  addRow(slot: number, row: RollupRow): void {
    addSums(this.#row(slot, row.access_key_id, row.group_id, row.external_model), row);
  }

  #row(slot: number, keyId: number | null, group: string | null, model: string | null): RollupRow {
    const bySlot = getOrSet(this.#index, slot, () => new Map());
    const byKey = getOrSet(bySlot, keyId, () => new Map());
    const byGroup = getOrSet(byKey, group, () => new Map());
    return getOrSet(byGroup, model, () => {
      const row: RollupRow = { slot_start: slot, access_key_id: keyId, group_id: group, external_model: model, ...emptySums() };
      this.rows.push(row);
      return row;
    });
  }
}

/** Minute rows summed per UTC hour: the rows they make in usage_rollup_hour. */
export function hourRows(minutes: readonly RollupRow[]): RollupRow[] {
  const hours = new RollupTable();
  for (const row of minutes) hours.addRow(hourOf(row.slot_start), row);
  return hours.rows;
}

export function hourOf(at: number): number {
  return Math.floor(at / HOUR_MS) * HOUR_MS;
}

function getOrSet<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
}
