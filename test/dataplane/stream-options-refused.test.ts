import t from 'tap';
import { StreamOptionsRefusals } from '../../src/dataplane/stream-options-refused.ts';
import type { CredentialView, GroupRecord } from '../../src/store/records.ts';

// The credentials whose upstream refused the added stream_options are remembered up to 1,024;
// the next one clears them all (each forgotten one pays one refused attempt again), so that the
// set cannot grow with every credential the gateway has ever served.

const group = { id: 1, updated_at: '2026-01-01T00:00:00.000Z' } as GroupRecord;
const credential = (id: number) => ({ id, revision: 1 }) as CredentialView;

t.test('1,024 refusing credentials are all remembered; the 1,025th clears them and alone is remembered', async (t) => {
  const refusals = new StreamOptionsRefusals();
  for (let id = 1; id <= 1024; id++) refusals.add(group, credential(id));
  t.ok(refusals.has(group, credential(1)) && refusals.has(group, credential(1024)), 'the first and the 1,024th');
  refusals.add(group, credential(1025));
  t.ok(refusals.has(group, credential(1025)), 'the 1,025th');
  t.notOk(refusals.has(group, credential(1)), 'the first forgotten');
  t.notOk(refusals.has(group, credential(1024)), 'the 1,024th forgotten');
});
