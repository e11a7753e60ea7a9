import t from 'tap';
import { requestFeatures } from '../../src/dataplane/request-features.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// Spec note 11: on ch29 and ch30 "responses creation is stateless". A `conversation` continues
// state the upstream would have stored, as `previous_response_id` does, so both are refused
// before any upstream call; a request that continues nothing is forwarded.

const NO_QUERY = new URLSearchParams();

t.test('a conversation named by id or by { id } continues stored state; empty or id-less ones do not', async (t) => {
  const continues = (body: Record<string, unknown>) => requestFeatures('optional', body, NO_QUERY).previous_response === true;
  t.ok(continues({ conversation: 'conv_123' }), 'string id');
  t.ok(continues({ conversation: { id: 'conv_123' } }), 'object with an id');
  t.notOk(continues({ conversation: '' }), 'empty string');
  t.notOk(continues({ conversation: { id: '' } }), 'empty id');
  t.notOk(continues({ conversation: {} }), 'no id');
  t.notOk(continues({ conversation: null }), 'null');
  t.notOk(continues({ input: 'hi' }), 'no conversation');
});

for (const channel of ['ch29', 'ch30']) {
  t.test(`${channel}: responses creation continuing a conversation is refused with note 11, never forwarded`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }));
    });
    const { keyValue } = await seedRoute(gw.store, { channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], protocols: ['x-responses'] });
    const create = (body: Record<string, unknown>) => fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', ...body }) });

    // The last two carry an input over the 1 MiB a body is parsed whole up to: spooled, and scanned for the same members.
    const large = 'x'.repeat(1.5 * 1024 * 1024);
    for (const [conversation, input] of [['conv_123', 'hi'], [{ id: 'conv_123' }, 'hi'], ['conv_123', large], [{ id: 'conv_123' }, large]] as const) {
      const label = `${JSON.stringify(conversation)}, input of ${input.length} characters`;
      const res = await create({ conversation, input });
      t.equal(res.status, 400, `${label}: 400`);
      const body = (await res.json()) as { error?: { code: string; message: string } };
      t.equal(body.error?.code, 'restricted_by_channel_note', `${label}: refused by a channel note`);
      t.match(body.error?.message, /refuses a previous_response_id or conversation \(note 11\)$/, `${label}: names what it carried and note 11`);
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.equal(record.error_code, 'restricted_by_channel_note', `${label}: recorded as refused`);
    }
    t.same(upstream.requests, [], 'the upstream received nothing');

    const res = await create({});
    t.equal(res.status, 200, 'a request continuing nothing is forwarded');
    await res.arrayBuffer();
    t.equal(upstream.requests.length, 1, 'one upstream request');
    t.equal(upstream.requests[0]?.url, '/v1/responses');
  });
}

// A background response is kept by the upstream until it is retrieved, and notes 11 (ch29,
// ch30) and 3 (ch32 to ch34) say retrieval is unsupported on these channels: its result could
// never be read, nor its usage counted (a background create answers queued, with none).
for (const [channel, note] of [['ch29', 11], ['ch30', 11], ['ch32', 3], ['ch33', 3], ['ch34', 3]] as const) {
  t.test(`${channel}: a background responses creation is refused with note ${note}, never forwarded; the same key's plain one is`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'resp_1', object: 'response', status: 'queued', output: [], usage: null }));
    });
    // The channel's own credential kind: ch32 to ch34 take a base URL with the key.
    await seedGroup(gw.store, { channel, baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-upstream-1'] });
    const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
    const create = (body: Record<string, unknown>) => fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', ...body }) });

    // A plain create first, so a plan kept for it would be the one the background create met.
    const plain = await create({ background: false });
    t.equal(plain.status, 200, 'background: false is forwarded');
    await plain.arrayBuffer();
    // The last one's input is over the 1 MiB a body is parsed whole up to: spooled, and scanned for `background` too.
    const cases: [string, Record<string, unknown>][] = [
      ['background', { background: true }],
      ['background and stream', { background: true, stream: true }],
      ['background, spooled', { background: true, input: 'x'.repeat(1.5 * 1024 * 1024) }],
    ];
    for (const [label, body] of cases) {
      const res = await create(body);
      t.equal(res.status, 400, `${label}: 400`);
      const answer = (await res.json()) as { error?: { code: string; message: string } };
      t.equal(answer.error?.code, 'restricted_by_channel_note', `${label}: refused by a channel note`);
      t.match(answer.error?.message, new RegExp(`refuses background = true \\(note ${note}\\)$`), `${label}: names note ${note}`);
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { error_code: 'restricted_by_channel_note', attempt_count: 0 }, `${label}: recorded as refused`);
    }
    t.equal(upstream.requests.length, 1, 'only the plain create reached the upstream');
  });
}
