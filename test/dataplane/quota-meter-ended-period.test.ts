import t from 'tap';
import { QuotaMeter } from '../../src/dataplane/quota-meter.ts';
import { openLogStore, tokenRecord as log } from './helpers/key-usage-stores.ts';
import type { AccessKeyRecord } from '../../src/store/records.ts';
import { reachedLine } from './helpers/quota-reached.ts';

const at = (iso: string) => Date.parse(iso);

for (const kind of ['sqlite', 'worker'] as const) {
  t.test(`${kind}: a session from the last hour, loaded after the turn, is judged by the last hour's logged usage only`, async (t) => {
    const logs = await openLogStore(t, kind);
    const startedAt = at('2026-03-02T10:59:00.000Z');
    const now = at('2026-03-02T11:00:30.000Z');
    logs.append(log(20, at('2026-03-02T09:59:59.999Z'), 1000));
    logs.append(log(20, at('2026-03-02T10:30:00.000Z'), 84));
    // Used in the new hour before the meter reads: not the session's period.
    logs.append(log(20, at('2026-03-02T11:00:00.000Z'), 50));
    const meter = new QuotaMeter(logs);
    meter.openSession(20, startedAt);
    const k = { id: 20, quota: { per_period: { period: 'hour', tokens: 100 } } } as AccessKeyRecord;
    await meter.load(k, now);
    t.equal(meter.sessionOver(k, now, startedAt, 16, 0), undefined, '84 + 16 of the last hour\'s 100');
    t.match(meter.sessionOver(k, now, startedAt, 17, 0), { scope: 'per_period', metric: 'tokens', used: 101 }, '84 + 17 goes past it');
    t.equal(await reachedLine(meter, k, now), undefined, 'the new hour: 50 of 100');
  });
}
