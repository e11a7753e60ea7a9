import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// batchEmbedContents names the model in the path and again in each listed request
// (`requests[].model`): a Group that maps the external name maps both, so the upstream never
// sees the path and the requests disagree.

async function embedGateway(t: Test) {
  const spoolDir = mkdtempSync(path.join(tmpdir(), 'switchyard-listed-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"embeddings":[]}');
    },
    { spoolDir, bufferedJsonBytes: 64 * 1024 },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'emb-ext', upstream: 'text-embedding-004' }], protocols: ['x-embeddings'] });
  const send = (body: string) =>
    fetch(`${gw.url}/v1beta/models/emb-ext:batchEmbedContents`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body });
  return { upstream, gw, send };
}

/** A batch whose four requests name `models` as given, with `filler` in each one's text. */
function batch(models: readonly string[], filler: string): string {
  const [a, b, c, d] = models.map((m) => JSON.stringify(m));
  return (
    `{"requests":[` +
    `{"model":${a},"content":{"parts":[{"text":"one ${filler}"}]},"taskType":"RETRIEVAL_DOCUMENT"},\n` +
    `{"content":{"parts":[{"text":"two ${filler}"}]}, "model" : ${b},"outputDimensionality":768},` +
    `{"model":${c},"content":{"parts":[{"text":"three ${filler}"}]}},` +
    `{"model":${d},"content":{"parts":[{"text":"models/emb-ext \\"model\\":\\"emb-ext\\""}]},"title":"emb-ext"}` +
    `],"seed":12345678901234567890}`
  );
}

// The client's spelling is kept; a request naming another model is left for the upstream to refuse.
const SENT = ['models/emb-ext', 'emb-ext', 'models/other-model', 'models/emb-ext'];
const EXPECTED = ['models/text-embedding-004', 'text-embedding-004', 'models/other-model', 'models/text-embedding-004'];

for (const [name, size] of [
  ['a small body', 16],
  ['a 3 MiB spooled body', 1024 * 1024],
] as const) {
  t.test(`batchEmbedContents, ${name}: every listed request naming the routed model gets the upstream name`, async (t) => {
    const { upstream, gw, send } = await embedGateway(t);
    const filler = 'x'.repeat(size);
    const body = batch(SENT, filler);
    const res = await send(body);
    t.equal(res.status, 200);
    await res.arrayBuffer();
    const seen = upstream.requests[0]!;
    t.equal(seen.url, '/v1beta/models/text-embedding-004:batchEmbedContents', 'the path model mapped');
    t.ok(seen.body.equals(Buffer.from(batch(EXPECTED, filler))), 'the listed models mapped, every other byte as sent');
    t.equal(Number(seen.headers['content-length']), seen.body.length);
    t.same(JSON.parse(seen.body.toString()).requests.map((r: { model: string }) => r.model), EXPECTED);
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, external_model: 'emb-ext', upstream_model: 'text-embedding-004' });
  });
}
