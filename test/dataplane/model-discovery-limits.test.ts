import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { withTimeout } from './helpers/dataplane-scenarios.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

const AUTH_KEY = 'discovery-limits-auth-key-0123456789abcdef';
const UPSTREAM_KEY = 'sk-up-discovery-limits-secret-000001';
// The caps documented in docs/management-api.md.
const MODEL_NAME_BYTES = 1024;
// A Group model's `upstream` limit (group-models.json).
const MAX_UPSTREAM_CHARS = 300;
const MAX_MODELS = 10_000;
const MAX_ID_BYTES = 4 * 1024 * 1024;

interface DiscoverAnswer {
  status: number;
  text: string;
  body: { code: number | string; data: { group_id: number; models: { id: string; configured: boolean }[]; truncated: boolean } };
}

/** The gateway with real discovery in front of a substitute upstream, and a Group on `channel` with one key. */
async function startDiscovery(t: Test, channel: string, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void) {
  const upstream = await startUpstream(respond);
  t.teardown(() => upstream.close());
  const server = await startDiscoveryServer(t, AUTH_KEY);
  const group = await server.store.groups.create({ name: 'g', channel, base_url: upstream.url, models: [{ external: 'a', upstream: 'm-a' }] });
  await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: UPSTREAM_KEY }, secretFields: ['api_key'] }]);
  const discover = async (): Promise<DiscoverAnswer> => {
    const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as DiscoverAnswer['body'] };
  };
  return { upstream, server, discover: () => withTimeout(discover(), 60_000, 'the discovery answer') };
}

/** A completions-style upstream that pages with `after` and never says it is done: page p holds `ids(p)`. */
function endlessPages(ids: (page: number) => string[], lastPage = Infinity) {
  return (req: RecordedUpstreamRequest, res: ServerResponse) => {
    const after = new URL(req.url, 'http://upstream.test').searchParams.get('after');
    const page = after === null ? 0 : Number(after.split('-')[1]) + 1;
    writeJson(res, 200, { object: 'list', data: ids(page).map((id) => ({ id, object: 'model' })), has_more: page < lastPage });
  };
}

/**
 * `count` ids for page `page`, each `m-<page>-<i>-`, padded to `bytes` bytes of UTF-8 when given:
 * with 4-byte characters, so that 1 KiB is well within the characters a Group model name may have.
 */
function pageIds(page: number, count: number, bytes = 0): string[] {
  return Array.from({ length: count }, (_, i) => {
    const id = `m-${page}-${i}-`;
    const pad = Math.max(0, bytes - id.length);
    return id + '𝄞'.repeat(Math.floor(pad / 4)) + 'x'.repeat(pad % 4);
  });
}

t.test("DISC skips ids a Group's model mapping cannot take (300 characters) or longer than a model name may be (1 KiB of UTF-8), and lists the rest", async (t) => {
  // '𝄞' is 4 bytes and 2 UTF-16 units: 256 of them are 256 characters and exactly 1 KiB.
  const listed = ['m-a', 'x'.repeat(MAX_UPSTREAM_CHARS), '𝄞'.repeat(MODEL_NAME_BYTES / 4), 'é'.repeat(MAX_UPSTREAM_CHARS), 'm-b'];
  const skipped = ['x'.repeat(MAX_UPSTREAM_CHARS + 1), 'é'.repeat(MAX_UPSTREAM_CHARS + 1), '𝄞'.repeat(MODEL_NAME_BYTES / 4 + 1)];
  const { server, discover } = await startDiscovery(t, 'ch02', (_req, res) => writeJson(res, 200, { object: 'list', data: [...listed.slice(0, 2), ...skipped, ...listed.slice(2)].map((id) => ({ id })) }));
  const { status, text, body } = await discover();
  t.equal(status, 200, text.slice(0, 300));
  t.same(
    body.data.models.map((m) => m.id),
    listed,
  );
  t.equal(body.data.truncated, false, 'a skipped id is not a truncated list');
  const put = await fetch(`${server.url}/api/groups/${body.data.group_id}/models`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ models: listed.map((upstream, i) => ({ external: `e-${i}`, upstream })) }),
  });
  t.equal(put.status, 200, 'every listed id can be configured as a Group model\'s upstream name');
});

t.test("DISC skips ids with a control character or DEL, which a Group's model mapping refuses, and lists the rest", async (t) => {
  const listed = ['m-a', 'm b\u0080é', 'm-b'];
  const skipped = ['m\u0000', 'm\tb', 'line\nbreak', 'm\u001f', 'm\u007f'];
  const { server, discover } = await startDiscovery(t, 'ch02', (_req, res) => writeJson(res, 200, { object: 'list', data: [listed[0], ...skipped, ...listed.slice(1)].map((id) => ({ id })) }));
  const { status, text, body } = await discover();
  t.equal(status, 200, text.slice(0, 300));
  t.same(
    body.data.models.map((m) => m.id),
    listed,
  );
  const put = (upstream: string[]) =>
    fetch(`${server.url}/api/groups/${body.data.group_id}/models`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ models: upstream.map((name, i) => ({ external: `e-${i}`, upstream: name })) }),
    });
  t.equal((await put(listed)).status, 200, "every listed id can be configured as a Group model's upstream name");
  for (const id of skipped) t.equal((await put([id])).status, 400, `${JSON.stringify(id)}, skipped, would be refused`);
});

t.test('DISC applies the caps to the name, after the generate-style models/ prefix', async (t) => {
  const atCap = 'g'.repeat(MAX_UPSTREAM_CHARS);
  const { discover } = await startDiscovery(t, 'ch15', (_req, res) => writeJson(res, 200, { models: [{ name: `models/${atCap}` }, { name: `models/${atCap}g` }, { name: 'models/m-a' }] }));
  const { status, text, body } = await discover();
  t.equal(status, 200, text.slice(0, 300));
  t.same(
    body.data.models.map((m) => m.id),
    [atCap, 'm-a'],
  );
});

t.test('DISC stops at 10,000 models across pages and says the list is truncated', async (t) => {
  const { upstream, discover } = await startDiscovery(t, 'ch02', endlessPages((p) => pageIds(p, 4000)));
  const { status, text, body } = await discover();
  t.equal(status, 200, text.slice(0, 300));
  t.equal(body.code, 0);
  t.same(
    body.data.models.map((m) => m.id),
    [0, 1, 2].flatMap((p) => pageIds(p, 4000)).slice(0, MAX_MODELS),
    'the first 10,000 in the upstream order',
  );
  t.equal(body.data.truncated, true);
  t.equal(upstream.requests.length, 3, 'no page is asked for once the cap is reached');
});

t.test('DISC lists exactly 10,000 models in full when the upstream has no more', async (t) => {
  const { upstream, discover } = await startDiscovery(t, 'ch02', endlessPages((p) => pageIds(p, MAX_MODELS / 2), 1));
  const { status, text, body } = await discover();
  t.equal(status, 200, text.slice(0, 300));
  t.equal(body.data.models.length, MAX_MODELS);
  t.equal(body.data.truncated, false, 'nothing was left out');
  t.equal(upstream.requests.length, 2);
});

t.test('DISC stops when the ids reach 4 MiB together and says the list is truncated', async (t) => {
  // 1,000 ids of 1 KiB a page: 4,096 fit, on the fifth page.
  const { upstream, discover } = await startDiscovery(t, 'ch02', endlessPages((p) => pageIds(p, 1000, MODEL_NAME_BYTES)));
  const { status, text, body } = await discover();
  t.equal(status, 200, text.slice(0, 300));
  const ids = body.data.models.map((m) => m.id);
  t.same(ids, [0, 1, 2, 3, 4].flatMap((p) => pageIds(p, 1000, MODEL_NAME_BYTES)).slice(0, MAX_ID_BYTES / MODEL_NAME_BYTES), 'the ids that fit, in order');
  t.ok(ids.reduce((sum, id) => sum + Buffer.byteLength(id), 0) <= MAX_ID_BYTES);
  t.equal(body.data.truncated, true);
  t.equal(upstream.requests.length, 5, 'no page is asked for once the cap is reached');
});
