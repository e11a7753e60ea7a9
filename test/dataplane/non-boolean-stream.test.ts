import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// docs/data-plane.md step 3: a JSON body whose top-level `stream` is neither a boolean nor null
// is refused before routing. A lenient upstream (pydantic's lax mode) streams on "true" or 1,
// while the gateway, reading no stream, would ask for no usage: the record would count no tokens.

const BUFFERED_JSON_BYTES = 4096;
const PAD = 'x'.repeat(2 * BUFFERED_JSON_BYTES);

const STYLES = {
  completions: {
    protocol: 'x-completions',
    channel: 'ch02',
    path: '/v1/chat/completions',
    headers: (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` }),
    body: (content: string) => ({ model: 'team-m', messages: [{ role: 'user', content }] }),
    answer: '{"id":"c1","object":"chat.completion","choices":[]}',
    refused: { error: { type: 'invalid_request_error', code: 'invalid_request_body', message: /"stream"/ } },
  },
  messages: {
    protocol: 'x-messages',
    channel: 'ch14',
    path: '/v1/messages',
    headers: (key: string): Record<string, string> => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    body: (content: string) => ({ model: 'team-m', max_tokens: 10, messages: [{ role: 'user', content }] }),
    answer: '{"id":"m1","type":"message","role":"assistant","content":[]}',
    refused: { type: 'error', error: { type: 'invalid_request_error', message: /"stream"/ } },
  },
};

async function gateway(t: Test, style: (typeof STYLES)[keyof typeof STYLES]) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(style.answer);
    },
    { bufferedJsonBytes: BUFFERED_JSON_BYTES },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], protocols: [style.protocol] });
  const send = (body: Record<string, unknown>) => fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...style.headers(keyValue), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { upstream, gw, send };
}

for (const [name, style] of Object.entries(STYLES)) {
  for (const [size, content] of [['buffered', 'hi'], ['spooled', PAD]] as const) {
    t.test(`${name}, ${size}: a stream that is no boolean is refused in the protocol's shape, before any upstream call; null and booleans pass`, async (t) => {
      const { upstream, gw, send } = await gateway(t, style);
      const body = style.body(content);
      t.equal(Buffer.byteLength(JSON.stringify(body)) > BUFFERED_JSON_BYTES, size === 'spooled', `the body is ${size}`);
      for (const stream of ['true', 1, 'yes', 0]) {
        const res = await send({ ...body, stream });
        t.equal(res.status, 400, `stream ${JSON.stringify(stream)}: refused`);
        t.match(await res.json(), style.refused, `stream ${JSON.stringify(stream)}: the protocol's error shape, naming the member`);
        t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 400, error_code: 'invalid_request_body', attempt_count: 0 });
      }
      t.equal(upstream.requests.length, 0, 'none went upstream');
      for (const stream of [null, false, true]) {
        const res = await send({ ...body, stream });
        await res.arrayBuffer();
        t.equal(res.status, 200, `stream ${JSON.stringify(stream)}: forwarded`);
      }
      t.equal(upstream.requests.length, 3, 'null and the booleans went upstream');
    });
  }
}
