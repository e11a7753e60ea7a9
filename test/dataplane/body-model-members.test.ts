import t, { type Test } from 'tap';
import { JsonMemberScanner, locateMembers } from '../../src/dataplane/body/index.ts';
import { locateBodyModels } from '../../src/dataplane/body/body-model-members.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// Gemini's batchEmbedContents, embedContent and countTokens name the model in the path and
// again in the body (`requests[].model`, `model`, `generateContentRequest.model`): a Group that
// maps the external name maps both, so the upstream never sees the path and the body disagree.

/** A gateway routing `external` (of `protocol`) to `upstreamModel`, and how to POST to `:{method}` on it. */
async function pathModelGateway(t: Test, protocol: string, external: string, upstreamModel: string, method: string) {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    },
    { bufferedJsonBytes: 64 * 1024 },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external, upstream: upstreamModel }], protocols: [protocol] });
  const send = (body: string) =>
    fetch(`${gw.url}/v1beta/models/${external}:${method}`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body });
  return { upstream, gw, send };
}

const embedGateway = (t: Test) => pathModelGateway(t, 'x-embeddings', 'emb-ext', 'text-embedding-004', 'batchEmbedContents');

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

/** An embedContent request naming `model`, after a nested "model" that is not the request's. */
function embedContent(model: string, filler: string): string {
  return (
    `{"content":{"model":"emb-ext","parts":[{"text":"${filler} models/emb-ext \\"model\\":\\"emb-ext\\""}]},\n` +
    ` "model" : ${JSON.stringify(model)},"taskType":"RETRIEVAL_QUERY","outputDimensionality":768,"seed":12345678901234567890}`
  );
}

/** A countTokens request whose GenerateContentRequest names `model`; the top-level contents have a "model" that is not it. */
function countTokens(model: string, filler: string): string {
  return (
    `{"contents":[{"model":"gen-ext","parts":[{"text":"gen-ext"}]}],"generateContentRequest":{"contents":[{"role":"user",` +
    `"parts":[{"text":"${filler} \\"model\\":\\"gen-ext\\""}]}],\n "model":${JSON.stringify(model)},"generationConfig":{"temperature":1.0E0}},"seed":12345678901234567890}`
  );
}

const OPERATIONS = [
  { method: 'embedContent', protocol: 'x-embeddings', external: 'emb-ext', upstream: 'text-embedding-004', body: embedContent, modelOf: (v: { model: string }) => v.model },
  { method: 'countTokens', protocol: 'x-generate', external: 'gen-ext', upstream: 'gemini-2.0-flash', body: countTokens, modelOf: (v: { generateContentRequest: { model: string } }) => v.generateContentRequest.model },
] as const;

for (const op of OPERATIONS) {
  for (const [name, size] of [
    ['a small body', 16],
    ['a spooled body over 1 MiB', 1024 * 1024],
  ] as const) {
    t.test(`${op.method}, ${name}: the body's model naming the routed model gets the upstream name`, async (t) => {
      const { upstream, gw, send } = await pathModelGateway(t, op.protocol, op.external, op.upstream, op.method);
      const filler = 'x'.repeat(size);
      // The client's spelling is kept; another model is left for the upstream to refuse, even
      // one longer than a nested model member is kept (embedContent's keeps routing's limit).
      const long = `models/${'long-'.repeat(1000)}`;
      const cases = [
        [`models/${op.external}`, `models/${op.upstream}`],
        [op.external, op.upstream],
        ['models/other-model', 'models/other-model'],
        [long, long],
      ] as const;
      for (const [i, [sent, expected]] of cases.entries()) {
        const res = await send(op.body(sent, filler));
        t.equal(res.status, 200);
        await res.arrayBuffer();
        const seen = upstream.requests[i]!;
        t.equal(seen.url, `/v1beta/models/${op.upstream}:${op.method}`, 'the path model mapped');
        t.ok(seen.body.equals(Buffer.from(op.body(expected, filler))), `${sent}: the model member is ${expected}, every other byte as sent`);
        t.equal(Number(seen.headers['content-length']), seen.body.length);
        t.equal(op.modelOf(JSON.parse(seen.body.toString())), expected);
        t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 200, external_model: op.external, upstream_model: op.upstream });
      }
    });
  }
}

t.test('the scanner key parent.name reports that member of the top-level object, as locateBodyModels finds it', async (t) => {
  const key = 'generateContentRequest.model';
  const text =
    '{"model":"top","generateContentRequest":{"contents":[{"model":"deep"}],"model" : "a","x":{"model":"no"}},' +
    '"other":{"model":"no"},"generateContentRequest":[{"model":"arr"}],"generateContentRequest":{"mod\\u0065l":"b"}}';
  const body = Buffer.from(text);
  const wanted = new Map([['model', 100], [key, 100]]);
  const expected = JSON.stringify(['model:"top"', `${key}:"a"`, `${key}:"b"`]);
  const cuts = [[...body].map((b) => Buffer.of(b)), ...Array.from({ length: body.length + 1 }, (_, cut) => [body.subarray(0, cut), body.subarray(cut)])];
  const wrong = cuts.filter((chunks) => {
    const scanner = new JsonMemberScanner(wanted);
    for (const chunk of chunks) scanner.push(chunk);
    return JSON.stringify(scanner.end().members.map((m) => `${m.key}:${m.raw?.toString()}`)) !== expected;
  });
  t.equal(wrong.length, 0, 'at every split point');
  const located = locateBodyModels(body, locateMembers(body), key).map((m) => body.toString('utf8', m.start, m.end));
  t.same(located, ['"a"', '"b"']);
});
