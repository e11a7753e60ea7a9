import t from 'tap';
import { CredentialPool } from '../../src/dataplane/credential-pool.ts';
import { lastAnswerHint } from '../../src/dataplane/retry-hints.ts';
import type { CredentialStore } from '../../src/store/config-store.ts';
import type { CredentialView } from '../../src/store/records.ts';
import { counted } from './helpers/counted-reads.ts';
import { coolingView } from './helpers/cooling-view.ts';

// A refusal's detail and retry hint, and the hint of a last answer passed on, come from the
// Group's index as a pick does: during a 429 storm over a large Group, a request does not read
// the whole Group again for them.

const POOL = 2000;

t.test("a refusal's detail and hint, and a last answer's hint, read the Group once per change of its states", async (t) => {
  const now = Date.now();
  // Every credential cooling, the first to recover in 10 s.
  const { array, reads } = counted(Array.from({ length: POOL }, (_, i) => coolingView(i + 1, new Date(now + 10_000 + i).toISOString())));
  const pool = new CredentialPool({} as CredentialStore);
  const group = { id: 1, channel: 'ch02' };
  const of = () => array;
  // A request's own verdict: its credential (one of the Group's) cooled for longer.
  const judged = [coolingView(5, new Date(now + 60_000).toISOString())];
  for (let i = 0; i < 500; i++) {
    t.equal(pool.usable(group, array, now).length, 0);
    if (i === 0) {
      t.equal(pool.noCredentialDetail([group], of, now), 'Every credential of the candidate groups is disabled or cooling down.');
      t.same(pool.retryHeaders([group], of, now), { 'retry-after': '10', 'retry-after-ms': '10000' });
      t.same(lastAnswerHint(pool, [group], of, judged, 1, now), { 'retry-after': '10', 'retry-after-ms': '10000' });
    } else {
      pool.noCredentialDetail([group], of, now);
      pool.retryHeaders([group], of, now);
      lastAnswerHint(pool, [group], of, judged, 1, now);
    }
  }
  // The index, and the Group by id for the judged view to stand in.
  t.ok(reads() <= 2 * POOL, `500 refusals and hints read the ${POOL} credentials at most twice (${reads()} reads)`);
  // The first cooldown has ended: one credential is usable, no hint replaces the answer's own.
  t.equal(lastAnswerHint(pool, [group], of, judged, 1, now + 10_000), undefined);
  for (let i = 0; i < 500; i++) lastAnswerHint(pool, [group], of, judged, 1, now + 10_000);
  t.ok(reads() <= 3 * POOL, `and once more when a cooldown ends (${reads()} reads)`);
});

t.test("a judged view stands in for its credential in the Group's index", async (t) => {
  const now = Date.now();
  const credentials = [coolingView(1, null), coolingView(2, new Date(now + 20_000).toISOString()), coolingView(3, new Date(now + 25_000).toISOString())];
  const pool = new CredentialPool({} as CredentialStore);
  const group = { id: 1, channel: 'ch02' };
  const of = () => credentials;
  t.same(lastAnswerHint(pool, [group], of, [], 2, now), {}, 'one usable: an empty hint after several attempts');
  const cooled = coolingView(1, new Date(now + 30_000).toISOString());
  t.same(lastAnswerHint(pool, [group], of, [cooled], 2, now), { 'retry-after': '20', 'retry-after-ms': '20000' }, 'the only usable one cooled by the request: the first recovery');
  const cooledFirst = coolingView(1, new Date(now + 5_000).toISOString());
  t.same(lastAnswerHint(pool, [group], of, [cooledFirst], 2, now), { 'retry-after': '5', 'retry-after-ms': '5000' }, "the judged view's recovery when it is the first");
  // A judged view in place of the one the index holds the first recovery of: the recovery after it.
  const disabled = { ...cooled, enabled: false } as CredentialView;
  const enabledAgain = coolingView(2, null);
  t.same(lastAnswerHint(pool, [group], of, [disabled], 2, now), { 'retry-after': '20', 'retry-after-ms': '20000' }, 'the only usable one disabled by the request');
  t.same(lastAnswerHint(pool, [group], of, [disabled, coolingView(2, new Date(now + 50_000).toISOString())], 2, now), { 'retry-after': '25', 'retry-after-ms': '25000' }, 'the next recovery when the first one is judged to recover later');
  t.same(lastAnswerHint(pool, [group], of, [disabled, enabledAgain], 2, now), {}, 'a judged view usable again counts as usable');
});
