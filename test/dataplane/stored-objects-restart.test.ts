import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openWorkerLogStore } from '../../src/store/logs/index.ts';
import { MemoryLogStore } from '../../src/store/memory/memory-log-store.ts';
import type { LogStore } from '../../src/store/logs/index.ts';
import type { ServerOptions } from '../../src/server/create-server.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream, type RecordedUpstreamRequest, type Upstream } from './helpers/data-plane-harness.ts';
import { createKey, eventually, seedGroup } from './helpers/dataplane-scenarios.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// What the data plane remembers of the stored objects it saw created (holder, creator, a
// background response's billing) outlives a restart: it is kept with the request logs
// (docs/data-plane.md, "Responses created through a Group are remembered").

const USAGE = { input_tokens: 100, output_tokens: 50, total_tokens: 150 };
const NONE = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

/** A responses upstream that answers for the ids it made (a background create queued, without usage) and 404 for any other. */
function responsesUpstream(prefix: string): Promise<Upstream> {
  const made = new Set<string>();
  let n = 0;
  return startUpstream((req: RecordedUpstreamRequest, res: ServerResponse) => {
    if (req.method === 'POST' && req.url === '/v1/responses') {
      const background = (JSON.parse(req.body.toString()) as { background?: boolean }).background === true;
      const id = `resp_${prefix}_${++n}`;
      made.add(id);
      return writeJson(res, 200, { id, object: 'response', status: background ? 'queued' : 'completed', output: [], usage: background ? null : USAGE });
    }
    const id = /^\/v1\/responses\/([^/?]+)/.exec(req.url)?.[1] ?? '';
    if (!made.has(id)) return writeJson(res, 404, { error: { message: `No response found with id '${id}'.`, type: 'invalid_request_error', code: null } });
    if (req.url.endsWith('/input_items')) return writeJson(res, 200, { object: 'list', data: [] });
    return writeJson(res, 200, { id, object: 'response', status: 'completed', output: [], usage: USAGE });
  });
}

/** Each test runs on the server's log store (a worker over logs.sqlite), and on a memory store the restarted server is given again. */
const STORES: { name: string; options: () => Partial<ServerOptions> }[] = [
  { name: 'logs.sqlite', options: () => ({ openLogStore: (dataDir: string) => openWorkerLogStore(dataDir) }) },
  { name: 'a memory log store', options: () => ({ logStore: new MemoryLogStore() }) },
];

/**
 * A real server (management and data plane) with two Groups on their own upstreams, X
 * preferred (priority 10) over Y (0), and two keys seeing both.
 */
async function setup(t: Test, options: Partial<ServerOptions>) {
  const x = await responsesUpstream('x');
  const y = await responsesUpstream('y');
  t.teardown(async () => {
    await x.close();
    await y.close();
  });
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount(), ...options });
  const store = gw.server.store;
  const models = [{ external: 'gpt-test', upstream: 'vendor-model' }];
  await seedGroup(store, { channel: 'ch31', baseUrl: x.url, models, secrets: ['sk-account-x-0123456789'], priority: 10 });
  const { group: groupY } = await seedGroup(store, { channel: 'ch31', baseUrl: y.url, models, secrets: ['sk-account-y-0123456789'], priority: 0 });
  const a = await createKey(store, { name: 'a', protocols: ['x-responses'] });
  const b = await createKey(store, { name: 'b', protocols: ['x-responses'] });
  return { gw, x, y, groupY, a, b };
}

async function call(gw: Gateway, keyValue: string, method: string, path: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${keyValue}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${gw.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const answer = (await res.json()) as { id?: string; error?: { code: string } };
  const requestId = res.headers.get('x-switchyard-request-id')!;
  const logs: LogStore = gw.server.logs;
  const record = await eventually(() => logs.get(requestId), `log record ${requestId}`);
  return { status: res.status, answer, record };
}

for (const { name, options } of STORES) {
  t.test(`${name}: after a restart, a response goes on to reach its holder only, and its creator only`, async (t) => {
    const { gw, x, y, groupY, a, b } = await setup(t, options());
    const created = await call(gw, a.keyValue, 'POST', '/v1/responses', { model: 'gpt-test', input: 'the prompt' });
    t.equal(created.status, 200);
    const id = created.answer.id!;
    t.match(id, /^resp_x_/, 'created through Group X');
    await gw.restart();
    // Y is now the one every new request goes to first: only the memory of the holder sends a read to X.
    await gw.server.store.groups.update(groupY.id, { priority: 20 });
    const xBefore = x.requests.length;
    const read = await call(gw, a.keyValue, 'GET', `/v1/responses/${id}`);
    t.equal(read.status, 200, "the creator's retrieval is answered");
    t.equal(x.requests.length, xBefore + 1, 'by X, which holds it');
    t.equal(y.requests.length, 0, 'Y saw nothing');
    for (const path of [`/v1/responses/${id}`, `/v1/responses/${id}/input_items`]) {
      const other = await call(gw, b.keyValue, 'GET', path);
      t.equal(other.status, 404, `another key's GET ${path}: 404`);
      t.equal(other.answer.error?.code, 'resource_not_found', `another key's GET ${path}: not found for it`);
      t.match(other.record, { access_key_id: b.key.id, error_code: 'resource_not_found', attempt_count: 0 });
    }
    t.equal(x.requests.length, xBefore + 1, "nothing of another key's calls reached X");
    t.equal(y.requests.length, 0, "nor Y");
  });

  t.test(`${name}: a background response created before a restart is billed once, by its creator's first read, across restarts`, async (t) => {
    const { gw, a } = await setup(t, options());
    const created = await call(gw, a.keyValue, 'POST', '/v1/responses', { model: 'gpt-test', input: 'the prompt', background: true });
    t.equal(created.status, 200);
    t.same(created.record.usage, NONE, 'the queued create counts no usage');
    const id = created.answer.id!;
    await gw.restart();
    const first = await call(gw, a.keyValue, 'GET', `/v1/responses/${id}`);
    t.match(first.record.usage, { input_tokens: 100, output_tokens: 50 }, 'the first read after the restart counts its usage');
    t.match(first.record, { external_model: 'gpt-test', upstream_model: 'vendor-model' }, 'under the model it was created with');
    await gw.restart();
    const second = await call(gw, a.keyValue, 'GET', `/v1/responses/${id}`);
    t.equal(second.status, 200);
    t.same(second.record.usage, NONE, 'after another restart, a second read counts nothing');
    t.match(await gw.server.logs.keyUsage(a.key.id), { tokens: 150 }, 'the key used its tokens once');
  });
}
