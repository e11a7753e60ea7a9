import t from 'tap';
import { nextPeriodStart, periodStart } from '../../src/management/quota.ts';

// Quota periods are UTC hours, days, weeks from Monday and calendar months (docs/management-api.md).
// Thursday 2026-11-26 10:15 UTC, and the last half hour of a year.
const thursday = Date.parse('2026-11-26T10:15:00Z');
const yearEnd = Date.parse('2026-12-31T23:30:00Z');

t.test('a period starts at its UTC boundary and the next one where it ends', async (t) => {
  const cases = [
    { period: 'hour', now: thursday, start: '2026-11-26T10:00:00.000Z', next: '2026-11-26T11:00:00.000Z' },
    { period: 'day', now: thursday, start: '2026-11-26T00:00:00.000Z', next: '2026-11-27T00:00:00.000Z' },
    { period: 'week', now: thursday, start: '2026-11-23T00:00:00.000Z', next: '2026-11-30T00:00:00.000Z' },
    { period: 'month', now: thursday, start: '2026-11-01T00:00:00.000Z', next: '2026-12-01T00:00:00.000Z' },
    { period: 'day', now: yearEnd, start: '2026-12-31T00:00:00.000Z', next: '2027-01-01T00:00:00.000Z' },
    { period: 'month', now: yearEnd, start: '2026-12-01T00:00:00.000Z', next: '2027-01-01T00:00:00.000Z' },
    { period: 'week', now: yearEnd, start: '2026-12-28T00:00:00.000Z', next: '2027-01-04T00:00:00.000Z' },
  ] as const;
  for (const c of cases) {
    t.equal(new Date(periodStart(c.period, c.now)).toISOString(), c.start, `${c.period} of ${new Date(c.now).toISOString()} starts`);
    t.equal(new Date(nextPeriodStart(c.period, c.now)).toISOString(), c.next, `and the next begins`);
  }
});
