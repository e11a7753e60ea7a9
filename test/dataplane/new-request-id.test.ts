import t from 'tap';
import { newRequestId } from '../../src/dataplane/new-request-id.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('ids are version 7 UUIDs that carry the time they were made', async (t) => {
  const at = Date.UTC(2026, 10, 21, 12, 34, 56, 789);
  const id = newRequestId(at);
  t.match(id, V7);
  t.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), at, 'the first 48 bits are the milliseconds');
});

t.test('ids sort by the time they were made', async (t) => {
  const base = Date.UTC(2026, 0, 1);
  const ids = [0, 1, 999, 2 ** 32, 2 ** 40].map((offset) => newRequestId(base + offset));
  t.same([...ids].sort(), ids);
});

t.test('ids made in the same millisecond differ (across refills of the random pool)', async (t) => {
  const at = Date.now();
  const ids = new Set<string>();
  for (let i = 0; i < 5000; i++) ids.add(newRequestId(at));
  t.equal(ids.size, 5000);
  for (const id of ids) if (!V7.test(id)) t.fail(`not a version 7 UUID: ${id}`);
});
