import type { QuotaMeter } from '../../../src/dataplane/quota-meter.ts';
import { firstReachedLine, type QuotaLine } from '../../../src/management/quota.ts';
import type { AccessKeyRecord } from '../../../src/store/records.ts';

/** The limit a request of `key` at `now` would be refused by, as the meter weighs it (requests in flight included); undefined when none. */
export async function reachedLine(meter: QuotaMeter, key: AccessKeyRecord, now: number): Promise<QuotaLine | undefined> {
  const status = await meter.status(key, now);
  return status === null ? undefined : firstReachedLine(status.lines);
}
