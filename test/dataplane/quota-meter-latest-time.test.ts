import t from 'tap';
import { QuotaMeter } from '../../src/dataplane/quota-meter.ts';
import { openLogStore, tokenRecord as log } from './helpers/key-usage-stores.ts';
import type { AccessKeyRecord } from '../../src/store/records.ts';
import { reachedLine } from './helpers/quota-reached.ts';

// A meter counts a period from its start to the next one's, and is built at the latest time it
// has seen, never at an earlier one a caller passes (a request's start, checked again later).

const at = (iso: string) => Date.parse(iso);
const tokensPerDay = (id: number, tokens: number) => ({ id, quota: { per_period: { period: 'day', tokens } } }) as AccessKeyRecord;

for (const kind of ['sqlite', 'worker'] as const) {
  t.test(`${kind}: a meter reads its period only, not the records of a later one already in the store`, async (t) => {
    const logs = await openLogStore(t, kind);
    logs.append(log(30, at('2026-03-02T12:00:00.000Z'), 4));
    // Appended without this meter seeing it (an earlier run's record).
    logs.append(log(30, at('2026-03-03T00:00:00.000Z'), 100));
    const meter = new QuotaMeter(logs);
    t.equal(await reachedLine(meter, tokensPerDay(30, 10), at('2026-03-02T23:00:00.000Z')), undefined, '4 of the day\'s 10');
    t.match(await reachedLine(meter, tokensPerDay(30, 4), at('2026-03-02T23:00:00.000Z')), { scope: 'per_period', used: 4 }, 'an edited quota reads the same day again');
  });

  t.test(`${kind}: a meter rebuilt for an edited quota at an earlier time than it has seen counts the period running now`, async (t) => {
    const logs = await openLogStore(t, kind);
    const meter = new QuotaMeter(logs);
    const today = at('2026-03-03T00:00:10.000Z');
    t.equal(await reachedLine(meter, tokensPerDay(31, 10), today), undefined);
    const record = log(31, today, 8);
    meter.record(record);
    logs.append(record);
    // Checked again at the start of a request that began yesterday, after the quota was edited.
    const yesterday = at('2026-03-02T23:59:50.000Z');
    t.match(await reachedLine(meter, tokensPerDay(31, 8), yesterday), { scope: 'per_period', used: 8 }, 'today\'s 8 tokens');
    t.match(await reachedLine(meter, tokensPerDay(31, 8), today + 1000), { scope: 'per_period', used: 8 }, 'still today\'s 8 tokens a moment later');
  });
}
