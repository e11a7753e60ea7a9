import t, { type Test } from 'tap';
import OpenAI, { NotFoundError } from 'openai';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, deferred, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { responseObject, sseText, writeJson } from '../sdk/helpers/vendor-wire.ts';

// A streamed create names its response in its first event, `response.created`, and may run for
// minutes after it (a background response, a reasoning model). The calls naming that response
// while its stream still runs (the SDK's cancel, a resumed stream from another connection) must
// already go to the credential that created it, and stay shut to other keys (docs/data-plane.md,
// stored responses). No read bills it while its stream may still report the usage.

const USAGE = { input_tokens: 100, output_tokens: 50 };
const NONE = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };
const COUNTED = { input_tokens: 100, output_tokens: 50, cached_tokens: 0, reasoning_tokens: 0 };

/**
 * A responses upstream whose background create streams `response.created`, then waits for
 * `finish` and ends with `response.completed` (or, `cut`, without it); a cancel is answered
 * cancelled, a read completed with the generation's usage.
 */
async function streamingUpstream(t: Test, o: { cut?: boolean } = {}) {
  const finish = deferred();
  const { gw, upstream } = await startUpstreamAndDataPlane(t, async (req, res) => {
    if (req.method === 'POST' && req.url === '/v1/responses') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseText([{ event: 'response.created', data: { type: 'response.created', sequence_number: 0, response: { ...responseObject('vendor-m', '', 'in_progress'), id: 'resp_streamed', background: true, status: 'queued' } } }]));
      await finish.promise;
      if (o.cut) {
        res.end();
        return;
      }
      res.end(sseText([{ event: 'response.completed', data: { type: 'response.completed', sequence_number: 1, response: { ...responseObject('vendor-m', 'done', 'completed', USAGE), id: 'resp_streamed', background: true } } }]));
      return;
    }
    if (req.url.endsWith('/cancel')) return writeJson(res, 200, { ...responseObject('vendor-m', '', 'in_progress'), id: 'resp_streamed', status: 'cancelled' });
    writeJson(res, 200, { ...responseObject('vendor-m', 'done', 'completed', USAGE), id: 'resp_streamed', background: true });
  });
  await seedGroup(gw.store, { channel: 'ch31', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-account-one-0123456789', 'sk-account-two-0123456789', 'sk-account-three-012345678'] });
  const owner = await createKey(gw.store, { name: 'owner', protocols: ['x-responses'] });
  const other = await createKey(gw.store, { name: 'other', protocols: ['x-responses'] });
  const client = (keyValue: string) => new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const usageOf = async (response: Response) => (await waitForLog(gw, response.headers.get('x-switchyard-request-id'))).usage;
  return { gw, upstream, owner, other, client, finish, usageOf };
}

t.test('a response named by its stream is routed to its holder and shut to other keys before the stream ends', async (t) => {
  const { gw, upstream, owner, other, client, finish, usageOf } = await streamingUpstream(t);
  const { data: stream, response: created } = await client(owner.keyValue).responses.create({ model: 'team-m', input: 'a long task', background: true, stream: true }).withResponse();
  const creator = upstream.requests[0]!.headers.authorization;
  const types: string[] = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type !== 'response.created') continue;
    t.equal(event.response.id, 'resp_streamed');
    const { response } = await client(owner.keyValue).responses.cancel('resp_streamed').withResponse();
    t.equal(upstream.requests.at(-1)!.headers.authorization, creator, "the owner's cancel goes to the credential that created the response");
    t.match(await waitForLog(gw, response.headers.get('x-switchyard-request-id')), { operation: 'responses-cancel', access_key_id: owner.key.id, status: 200 });
    const read = await client(owner.keyValue).responses.retrieve('resp_streamed').withResponse();
    t.equal(upstream.requests.at(-1)!.headers.authorization, creator, "the owner's read goes there too");
    t.same(await usageOf(read.response), NONE, 'a read while the stream runs bills nothing: the stream may still report the usage');

    const forwarded = upstream.requests.length;
    const refused = await client(other.keyValue).responses.cancel('resp_streamed').catch((e: unknown) => e);
    t.type(refused, NotFoundError, "another key's cancel is not found");
    t.equal((refused as NotFoundError).code, 'resource_not_found');
    t.equal(upstream.requests.length, forwarded, "nothing of the other key's reached the upstream");
    finish.resolve();
  }
  t.same(types, ['response.created', 'response.completed'], 'the stream ran to its end');
  t.same(await usageOf(created), COUNTED, 'the stream reported the usage: counted with the create');

  const { response } = await client(owner.keyValue).responses.retrieve('resp_streamed').withResponse();
  t.equal(upstream.requests.at(-1)!.headers.authorization, creator);
  t.same(await usageOf(response), NONE, 'and not again by a read');
});

t.test('a background stream that ends without its usage leaves it to the first read after it', async (t) => {
  const { upstream, owner, client, finish, usageOf } = await streamingUpstream(t, { cut: true });
  const { data: stream, response: created } = await client(owner.keyValue).responses.create({ model: 'team-m', input: 'a long task', background: true, stream: true }).withResponse();
  const creator = upstream.requests[0]!.headers.authorization;
  for await (const event of stream) {
    if (event.type !== 'response.created') continue;
    const { response } = await client(owner.keyValue).responses.retrieve('resp_streamed').withResponse();
    t.same(await usageOf(response), NONE, 'a read while the stream runs bills nothing');
    finish.resolve();
  }
  t.same(await usageOf(created), NONE, 'the stream reported no usage');
  const first = await client(owner.keyValue).responses.retrieve('resp_streamed').withResponse();
  t.equal(upstream.requests.at(-1)!.headers.authorization, creator);
  t.same(await usageOf(first.response), COUNTED, 'the first read after the stream counts it');
  const again = await client(owner.keyValue).responses.retrieve('resp_streamed').withResponse();
  t.same(await usageOf(again.response), NONE, 'once');
});
