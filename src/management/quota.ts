import type { LogReader } from '../store/log-store.ts';
import type { AccessKeyRecord, QuotaLimits, QuotaPeriod } from '../store/records.ts';

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

/**
 * Usage of an AccessKey against its quota, from the usage store: requests, tokens (input +
 * output) and cost, lifetime and in the current period. A limit is exceeded once used >= limit.
 */
export async function quotaStatus(key: AccessKeyRecord, logs: LogReader, now: number): Promise<QuotaStatus | null> {
  if (!key.quota) return null;
  const lines: QuotaLine[] = [];
  const measure = async (from: number | undefined) => {
    const s = await logs.statistics(from === undefined ? { access_key_id: key.id } : { access_key_id: key.id, from });
    return { requests: s.requests, tokens: s.input_tokens + s.output_tokens, cost: s.cost };
  };
  const add = (scope: QuotaLine['scope'], limits: QuotaLimits, used: Record<keyof QuotaLimits, number>, period?: QuotaPeriod) => {
    for (const metric of ['requests', 'tokens', 'cost'] as const) {
      const limit = limits[metric];
      if (limit !== undefined) lines.push({ scope, ...(period ? { period } : {}), metric, limit, used: used[metric] });
    }
  };
  if (key.quota.total) add('total', key.quota.total, await measure(undefined));
  const pp = key.quota.per_period;
  if (pp) add('per_period', pp, await measure(periodStart(pp.period, now)), pp.period);
  return { exceeded: lines.some((l) => l.used >= l.limit), lines };
}
