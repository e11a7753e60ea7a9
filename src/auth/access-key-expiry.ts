import type { AccessKeyRecord } from '../store/records.ts';

/**
 * Whether an AccessKey has expired at `now`. A stored `expires_at` that names no instant
 * counts as expired: such a value was stored before the management API normalized it, and a
 * key whose end cannot be read fails closed.
 */
export function accessKeyExpired(key: Pick<AccessKeyRecord, 'expires_at'>, now: number): boolean {
  if (key.expires_at === null) return false;
  return !(Date.parse(key.expires_at) > now);
}

/**
 * `expires_at` as it is stored: UTC, to the millisecond. Undefined for a value that names no
 * instant, such as an RFC 3339 offset without minutes (`+01`) or a leap second, which the
 * schema's date-time format accepts but `Date.parse` does not.
 */
export function storedExpiry(value: string): string | undefined {
  const at = Date.parse(value);
  return Number.isFinite(at) ? new Date(at).toISOString() : undefined;
}
