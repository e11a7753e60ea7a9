import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, waitForLog } from './helpers/dataplane-scenarios.ts';

// Google filters an answer by the `fields` system parameter (`$fields` too, `%24fields` as sent)
// or the X-Goog-FieldMask header, and `alt` (`$alt`) picks its format. A mask without
// `usageMetadata`, or a format the gateway does not read (proto, media), would leave the request
// at 0 tokens and its key's token quota never full. The substitute upstream honours all of them.

const FULL = { candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 300, candidatesTokenCount: 100, totalTokenCount: 400 } };

/** The answer's top-level members the mask names, as Google filters them. */
function masked(req: RecordedUpstreamRequest): Record<string, unknown> {
  const query = new URLSearchParams(req.url.split('?')[1] ?? '');
  const mask = query.get('fields') ?? query.get('$fields') ?? (req.headers['x-goog-fieldmask'] as string | undefined);
  if (mask === undefined || mask === null) return FULL;
  const names = mask.split(',').map((m) => m.trim().split('.')[0]);
  return Object.fromEntries(Object.entries(FULL).filter(([name]) => names.includes(name)));
}

function googleLike(req: RecordedUpstreamRequest, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify(masked(req)));
}

async function generateRoute(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, googleLike);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'team-gen', upstream: 'vendor-gen' }], protocols: ['x-generate', 'x-embeddings'] });
  const post = (target: string, headers: Record<string, string> = {}, body: unknown = { contents: [{ parts: [{ text: 'hi' }] }] }) =>
    fetch(`${gw.url}${target}`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { upstream, gw, post };
}

const GENERATE = '/v1beta/models/team-gen:generateContent';

t.test('a response filter (fields, $fields, %24fields, X-Goog-FieldMask) stays with the gateway on a generate request: the usage is counted', async (t) => {
  const { upstream, gw, post } = await generateRoute(t);
  for (const [label, query, headers] of [
    ['fields', '?fields=candidates', {}],
    ['$fields', '?$fields=candidates&a=%2F+b', {}],
    ['%24fields', '?a=1&%24fields=candidates', {}],
    ['X-Goog-FieldMask', '', { 'x-goog-fieldmask': 'candidates' }],
  ] as const) {
    const res = await post(`${GENERATE}${query}`, headers);
    t.equal(res.status, 200, label);
    const body = (await res.json()) as typeof FULL;
    t.same(body.usageMetadata, FULL.usageMetadata, `${label}: the client gets the whole answer`);
    const seen = upstream.requests.at(-1)!;
    t.notMatch(seen.url, /fields/, `${label}: no field mask parameter upstream`);
    t.equal(seen.headers['x-goog-fieldmask'], undefined, `${label}: no field mask header upstream`);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record.usage, { input_tokens: 300, output_tokens: 100 }, `${label}: the usage is recorded`);
  }
  t.equal(upstream.requests.at(-3)!.url, '/v1beta/models/vendor-gen:generateContent?a=%2F+b', 'other parameters keep their spelling');
});

t.test('a generate-style embedding drops the response filter too', async (t) => {
  const { upstream, post } = await generateRoute(t);
  const res = await post('/v1beta/models/team-gen:embedContent?fields=embedding&$fields=x&keep=1', {}, { content: { parts: [{ text: 'hi' }] } });
  t.equal(res.status, 200);
  t.equal(upstream.requests.at(-1)!.url, '/v1beta/models/vendor-gen:embedContent?keep=1');
});

t.test('alt other than json or sse is refused 400 unsupported_response_format in the generate shape, before any upstream call', async (t) => {
  const { upstream, gw, post } = await generateRoute(t);
  for (const query of ['?alt=proto', '?alt=media', '?$alt=proto', '?%24alt=media', '?alt=json&alt=proto', '?alt=JSON', '?callback=cb', '?%24callback=cb']) {
    const res = await post(`${GENERATE}${query}`);
    t.equal(res.status, 400, query);
    const body = (await res.json()) as { error: { status: string; details: Array<{ reason: string }> } };
    t.equal(body.error.status, 'INVALID_ARGUMENT', `${query}: in the generate shape`);
    t.equal(body.error.details[0]?.reason, 'unsupported_response_format', `${query}: the stable code`);
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.equal(record.error_code, 'unsupported_response_format');
  }
  t.equal(upstream.requests.length, 0, 'nothing went upstream');
  for (const query of ['?alt=json', '?$alt=json']) {
    const res = await post(`${GENERATE}${query}`);
    t.equal(res.status, 200, `${query} is forwarded`);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)!.url, `/v1beta/models/vendor-gen:generateContent${query}`, `${query}: as sent`);
  }
});

t.test('a completions-style request keeps a `fields` or `alt` parameter: they are Google\'s only in the generate style', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completionJson('vendor-chat'));
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions?fields=x&alt=proto`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  t.equal(upstream.requests.at(-1)!.url, '/v1/chat/completions?fields=x&alt=proto');
});
