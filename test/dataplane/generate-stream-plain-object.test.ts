import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// A generate-style stream request (streamGenerateContent) that the upstream answers with one
// plain JSON object, as it would a non-streamed request: on a native route the answer comes back
// as the upstream sent it (decisions.md §3), its usage read as a non-streamed body's, as the
// other styles do for a JSON answer to a stream request. Only a body that opens with `[` (past
// whitespace) is a stream framed as one array (src/dataplane/relay/relay-json-array.ts).

const INPUT_TOKENS = 7;
const OUTPUT_TOKENS = 3;
const PLAIN_OBJECT = JSON.stringify({
  candidates: [{ content: { role: 'model', parts: [{ text: 'echo: [hi]' }] }, finishReason: 'STOP' }],
  usageMetadata: { promptTokenCount: INPUT_TOKENS, candidatesTokenCount: OUTPUT_TOKENS, totalTokenCount: INPUT_TOKENS + OUTPUT_TOKENS },
});

/** A ch31 (native generate) Group whose upstream writes `pieces` one at a time, then ends. */
async function generateScenario(t: Test, pieces: string[], end: (res: ServerResponse) => void = (res) => res.end()) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    for (const piece of pieces) {
      res.write(piece);
      // Separate reads at the gateway, so that the choice of relay meets a body in pieces.
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    end(res);
  });
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const send = (query: string) =>
    fetch(`${gw.url}/v1beta/models/team-m:streamGenerateContent${query}`, {
      method: 'POST',
      headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
  return { gw, upstream, send };
}

for (const query of ['?alt=sse', '']) {
  const label = query === '' ? 'without alt=sse' : 'with alt=sse';

  t.test(`generate stream ${label} answered with a plain object: the upstream's bytes, 200, usage read, no failure logged`, async (t) => {
    // Cut inside the object, after a `[` of its own: the body is judged by its first byte only.
    const cutAt = PLAIN_OBJECT.indexOf('[') + 1;
    const pieces = [PLAIN_OBJECT.slice(0, cutAt), PLAIN_OBJECT.slice(cutAt)];
    const { gw, upstream, send } = await generateScenario(t, pieces);
    const res = await send(query);
    t.equal(res.status, 200);
    const body = await withTimeout(res.text(), 10_000, 'the client body');
    t.equal(body, pieces.join(''), 'the client gets the upstream body unchanged');
    t.match(upstream.requests[0]?.url, /:streamGenerateContent/, 'the upstream was asked for a stream');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, error_code: null }, 'no upstream_stream_broken');
    t.same(record.usage, { input_tokens: INPUT_TOKENS, output_tokens: OUTPUT_TOKENS, cached_tokens: 0, reasoning_tokens: 0 }, 'usage read from the object');
  });
}

t.test('generate stream answered with whitespace, then a plain object: the whitespace is kept and the object passes as sent', async (t) => {
  const pieces = ['\r\n  ', `\n${PLAIN_OBJECT}`];
  const { gw, send } = await generateScenario(t, pieces);
  const res = await send('');
  t.equal(res.status, 200);
  t.equal(await withTimeout(res.text(), 10_000, 'the client body'), pieces.join(''), 'the upstream body, leading whitespace included');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
  t.equal(record.usage?.input_tokens, INPUT_TOKENS, 'usage read');
});

t.test('generate stream answered with a plain object without usage or arrays: passed on as sent, no usage', async (t) => {
  // No `[` anywhere (the audit's probe): nothing in it could be taken for an array's start.
  const object = JSON.stringify({ echo: { model: 'vendor-m', text: 'no usage' } });
  const { gw, send } = await generateScenario(t, [object]);
  const res = await send('?alt=sse');
  t.equal(await withTimeout(res.text(), 10_000, 'the client body'), object);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
  t.same(record.usage, { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 }, 'nothing counted');
});

// An array cut off before its `]` is what tells the array relay from a plain body's: only the
// array relay closes it with an error element and records the break.
for (const [label, pieces] of [
  ['whitespace in its own read, then `[`', ['\r\n \t', '[{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}']],
  ['whitespace and `[` in one read', ['\n  [{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}']],
] as const) {
  t.test(`generate stream answered with ${label}: still relayed as an array`, async (t) => {
    const { gw, send } = await generateScenario(t, [...pieces]);
    const res = await send('');
    t.equal(res.status, 200);
    const text = await withTimeout(res.text(), 10_000, 'the client body');
    t.ok(text.startsWith(pieces.join('')), 'the upstream bytes come first, unchanged');
    let parsed: unknown;
    t.doesNotThrow(() => (parsed = JSON.parse(text)), 'the client gets a complete JSON array');
    t.ok(Array.isArray(parsed), 'an array');
    const elements = parsed as unknown[];
    t.equal(elements.length, 2, 'the upstream element, then the error element');
    t.match(elements.at(-1), { error: { details: [{ reason: 'upstream_stream_broken' }] } });
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.equal(record.error_code, 'upstream_stream_broken');
  });
}

t.test('generate stream answered with a plain object that breaks off: the connection is cut, no error element is added', async (t) => {
  const head = PLAIN_OBJECT.slice(0, 40);
  const { gw, send } = await generateScenario(t, [head], (res) => res.socket?.destroy());
  const res = await send('');
  t.equal(res.status, 200);
  const text = await withTimeout(res.text().then((body) => `<ended> ${body}`, (err: Error) => `<cut> ${err.message}`), 10_000, 'the client body');
  t.match(text, /^<cut>/, 'a plain body broken off ends as a cut connection, as a non-streamed body does');
  t.notMatch(text, /upstream_stream_broken/, 'no error element invented');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.error_code, 'upstream_stream_broken', 'the break is recorded');
});

t.test('generate stream answered with a plain object that takes longer than the stream idle timeout, never silent that long: passed on whole, as a non-streamed body is', async (t) => {
  // Eight pieces 150 ms apart: 1.05 s in all against an idle timeout of 1 s. The watch measures
  // silence, not the body's length in time (a silence that long cuts it: plain-body-idle.test.ts).
  const size = Math.ceil(PLAIN_OBJECT.length / 8);
  const pieces = Array.from({ length: 8 }, (_, i) => PLAIN_OBJECT.slice(i * size, (i + 1) * size));
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (const piece of pieces.slice(0, -1)) {
        res.write(piece);
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      res.end(pieces.at(-1));
    },
    { streamIdleTimeoutMs: 1000 },
  );
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const res = await fetch(`${gw.url}/v1beta/models/team-m:streamGenerateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' },
    body: '{"contents":[]}',
  });
  t.equal(await withTimeout(res.text(), 10_000, 'the client body'), pieces.join(''));
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, error_code: null });
});
