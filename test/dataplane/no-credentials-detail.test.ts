import t, { type Test } from 'tap';
import { inspectRoute } from '../../src/management/inspect/inspect-route.ts';
import { startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';

// A Group with no credentials at all is refused with no_available_credential; the refusal, and
// route inspection's `detail` (the same wording), say the Group has none and how to import one,
// not that its credentials are "disabled or cooling down".

const MODEL = { external: 'm', upstream: 'vendor-m' };

async function gateway(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  return { upstream, gw };
}

const emptyGroup = async (gw: Gateway, url: string) => (await gw.store.groups.create({ name: `empty-${Math.random()}`, channel: 'ch02', base_url: url, models: [MODEL] })).id;

/** The detail of the data plane's 503, checked to be what inspection says for the same key and model. */
async function refusal(t: Test, gw: Gateway) {
  const { key, keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...clientAuthHeaders('x-completions', keyValue), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [] }) });
  const answer = (await res.json()) as { error: { message: string } };
  const inspection = await inspectRoute({ groups: gw.store.groups, credentials: gw.store.credentials, accessKeys: gw.store.accessKeys, quotaOf: undefined, now: Date.now() }, { protocol: 'x-completions', external_model: 'm', access_key_id: key.id });
  t.equal(res.status, 503);
  t.equal(inspection.reason_code, 'no_available_credential');
  // The 503 leads with its code's general sentence; the detail follows it.
  t.equal(answer.error.message, `No upstream credential is available for this route right now. ${inspection.detail}`, 'inspection says what the data plane says');
  return inspection.detail;
}

t.test('a Group with no credentials: named, with the import endpoint', async (t) => {
  const { upstream, gw } = await gateway(t);
  const g = await emptyGroup(gw, upstream.url);
  t.equal(await refusal(t, gw), `Group ${g} has no credentials: import one (POST /api/groups/${g}/credentials/import).`);
  t.same(upstream.requests, []);
});

t.test('one Group with none, another whose only credential is disabled: both situations are named', async (t) => {
  const { upstream, gw } = await gateway(t);
  const g = await emptyGroup(gw, upstream.url);
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [MODEL], secrets: ['sk-disabled'] });
  await gw.store.credentials.setState(group.id, credentials[0]!.id, { to: 'disabled', reason: 'upstream answered 401' });
  t.equal(await refusal(t, gw), `Group ${g} has no credentials: import one (POST /api/groups/${g}/credentials/import). Every credential of the other candidate groups is disabled or cooling down.`);
});

t.test('several Groups with none', async (t) => {
  const { upstream, gw } = await gateway(t);
  const a = await emptyGroup(gw, upstream.url);
  const b = await emptyGroup(gw, upstream.url);
  t.equal(await refusal(t, gw), `Groups ${a}, ${b} have no credentials: import one (POST /api/groups/{group_id}/credentials/import).`);
});
