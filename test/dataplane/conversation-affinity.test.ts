import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// A conversation (`conversation` of a responses create or input-token count) is stored by the
// upstream with the key that created it, as a response is: another credential's answer is 404.
// Once a call naming it succeeded, the gateway sends every later one to that credential.

const HOLDER = 'Bearer sk-account-one-0123456789';

t.test('a conversation continues on the credential that answered for it first, by id or { id }, for any key', async (t) => {
  let n = 0;
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (req, res) => {
    const body = JSON.parse(req.body.toString()) as { conversation?: string | { id: string } };
    const conversation = typeof body.conversation === 'string' ? body.conversation : body.conversation?.id;
    const held = req.headers.authorization === HOLDER;
    res.writeHead(held ? 200 : 404, { 'content-type': 'application/json' });
    const answer = !held
      ? { error: { message: `Conversation with id '${conversation}' not found.`, type: 'invalid_request_error', param: null, code: null } }
      : req.url === '/v1/responses/input_tokens'
        ? { object: 'response.input_tokens', input_tokens: 7 }
        : { id: `resp_${++n}`, object: 'response', status: 'completed', conversation: { id: conversation }, output: [], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } };
    res.end(JSON.stringify(answer));
  });
  const { group } = await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-account-one-0123456789', 'sk-account-two-0123456789'] });
  const a = await createKey(gw.store, { name: 'a', protocols: ['x-responses'] });
  const b = await createKey(gw.store, { name: 'b', protocols: ['x-responses'] });
  const post = async (keyValue: string, path: string, body: Record<string, unknown>) => {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', ...body }) });
    await res.arrayBuffer();
    return { status: res.status, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
  };

  // Not yet known: routed as any create, until the holder answers.
  // Two credentials of equal weight take turns: the holder answers one of the first two.
  let first = await post(a.keyValue, '/v1/responses', { conversation: 'conv_1' });
  if (first.status !== 200) first = await post(a.keyValue, '/v1/responses', { conversation: 'conv_1' });
  t.equal(first.status, 200, 'the holder answered within two turns');
  const holder = first.record.credential_id;

  const calls: [string, string, Record<string, unknown>][] = [
    [a.keyValue, '/v1/responses', { conversation: 'conv_1' }],
    [a.keyValue, '/v1/responses', { conversation: { id: 'conv_1' } }],
    [a.keyValue, '/v1/responses/input_tokens', { conversation: 'conv_1' }],
    [b.keyValue, '/v1/responses', { conversation: 'conv_1' }],
  ];
  for (let round = 0; round < 3; round++) {
    for (const [keyValue, path, body] of calls) {
      const { status, record } = await post(keyValue, path, body);
      t.equal(status, 200, `${path} ${JSON.stringify(body)}: answered by the holder`);
      t.equal(record.credential_id, holder, `${path} ${JSON.stringify(body)}: sent with the credential that holds the conversation`);
    }
  }

  // Its holder gone, the refusal names what it held.
  await gw.store.groups.update(group.id, { enabled: false });
  const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${a.keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', conversation: 'conv_1' }) });
  t.equal(res.status, 503);
  t.match(await res.json(), { error: { code: 'no_available_credential', message: 'The Group that holds this conversation is not available to this key.' } });
});
