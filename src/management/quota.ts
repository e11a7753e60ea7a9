import type { KeyUsage, LogReader } from '../store/log-store.ts';
import type { AccessKeyQuota, AccessKeyRecord, QuotaLimits, QuotaPeriod } from '../store/records.ts';

export interface QuotaLine {
  scope: 'total' | 'per_period';
  period?: QuotaPeriod;
  metric: keyof QuotaLimits;
  limit: number;
  used: number;
}

export interface QuotaStatus {
  exceeded: boolean;
  lines: QuotaLine[];
}

/** A key's quota status at `now`, as one source weighs it (the data plane's meter, or the usage store). */
export type QuotaOf = (key: AccessKeyRecord, now: number) => Promise<QuotaStatus | null>;

/** Start (epoch ms, UTC) of the quota period containing `now`; weeks start on Monday. */
export function periodStart(period: QuotaPeriod, now: number): number {
  const d = new Date(now);
  switch (period) {
    case 'hour':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    case 'week':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

/** When the period after the one `now` falls in begins (UTC, as periodStart). */
export function nextPeriodStart(period: QuotaPeriod, now: number): number {
  const start = new Date(periodStart(period, now));
  switch (period) {
    case 'hour':
      return start.getTime() + 3_600_000;
    case 'day':
      return Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 1);
    case 'week':
      return Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 7);
    case 'month':
      return Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
  }
}

/** What an AccessKey used against a quota: forwarded requests, tokens (input + output), cost. */
export type QuotaUsage = KeyUsage;

const METRICS = ['requests', 'tokens', 'cost'] as const;

/** One line per limit the quota sets, beside what was used: lifetime (`total`) and in the current period (`period`). */
export function quotaLines(quota: AccessKeyQuota, total: QuotaUsage, period: QuotaUsage): QuotaLine[] {
  const lines: QuotaLine[] = [];
  const add = (scope: QuotaLine['scope'], limits: QuotaLimits, used: QuotaUsage, kind?: QuotaPeriod) => {
    for (const metric of METRICS) {
      const limit = limits[metric];
      if (limit !== undefined) lines.push({ scope, ...(kind ? { period: kind } : {}), metric, limit, used: used[metric] });
    }
  };
  if (quota.total) add('total', quota.total, total);
  if (quota.per_period) add('per_period', quota.per_period, period, quota.per_period.period);
  return lines;
}

/** What a refusal for a reached limit says of it: the data plane's message and route inspection's detail. */
export function quotaReachedDetail(line: QuotaLine): string {
  return `${line.scope === 'total' ? 'Total' : `Per ${line.period}`} ${line.metric} limit ${line.limit} reached.`;
}

/** Whether the quota sets any limit; `{ total: {} }` or a period alone limits nothing. */
export function quotaHasLimits(quota: AccessKeyQuota | null | undefined): quota is AccessKeyQuota {
  const sets = (limits: QuotaLimits | undefined) => limits !== undefined && METRICS.some((metric) => limits[metric] !== undefined);
  return !!quota && (sets(quota.total) || sets(quota.per_period));
}

/** A fresh zero usage (the data plane's meter adds to it in place). */
export function nothingUsed(): QuotaUsage {
  return { requests: 0, tokens: 0, cost: 0 };
}

/**
 * Usage of an AccessKey against its quota, from the usage store: requests, tokens (input +
 * output) and cost, lifetime and in the current period. A limit is exceeded once used >= limit.
 */
export async function quotaStatus(key: AccessKeyRecord, logs: LogReader, now: number): Promise<QuotaStatus | null> {
  const { quota } = key;
  if (!quota) return null;
  const pp = quota.per_period;
  const total = quota.total ? await logs.keyUsage(key.id) : nothingUsed();
  const period = pp ? await logs.keyUsage(key.id, periodStart(pp.period, now)) : nothingUsed();
  const lines = quotaLines(quota, total, period);
  return { exceeded: firstReachedLine(lines) !== undefined, lines };
}

/**
 * The first limit reached among `lines` (only requests lines unless `usesTokens`): the one a
 * request is refused by, which the data plane's refusal and route inspection both name.
 */
export function firstReachedLine(lines: readonly QuotaLine[], usesTokens = true): QuotaLine | undefined {
  return lines.find((l) => l.used >= l.limit && (usesTokens || l.metric === 'requests'));
}
