import type { ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { withTimeout } from './helpers/dataplane-scenarios.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

const AUTH_KEY = 'discovery-test-auth-key-0123456789abcdef';
const UPSTREAM_KEY = 'sk-up-discovery-secret-000001';

/** The gateway with real discovery in front of a substitute upstream, and a Group on `channel` with one key. */
async function startDiscovery(t: Test, channel: string, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void, basePath = '') {
  const upstream = await startUpstream(respond);
  const server = await startDiscoveryServer(t, AUTH_KEY);
  t.teardown(() => upstream.close());
  const group = await server.store.groups.create({ name: 'g', channel, base_url: `${upstream.url}${basePath}`, models: [{ external: 'a', upstream: 'm-a' }] });
  await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: UPSTREAM_KEY }, secretFields: ['api_key'] }]);
  const discover = async () => {
    const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as { code: number | string; data: { models: { id: string; configured: boolean }[]; truncated: boolean; reason?: string; upstream_status?: number; detail?: string } } };
  };
  return { upstream, server, discover };
}

const cases = [
  { channel: 'ch02', path: '/v1/models', header: 'authorization', value: `Bearer ${UPSTREAM_KEY}`, answer: { object: 'list', data: [{ id: 'm-a' }, { id: 'm-b' }] } },
  { channel: 'ch14', path: '/v1/models', header: 'x-api-key', value: UPSTREAM_KEY, answer: { data: [{ type: 'model', id: 'm-a' }, { type: 'model', id: 'm-b' }], has_more: false } },
  { channel: 'ch15', path: '/v1beta/models', header: 'x-goog-api-key', value: UPSTREAM_KEY, answer: { models: [{ name: 'models/m-a' }, { name: 'models/m-b' }] } },
  // Deployment style (decisions.md §4): the vendor's "Models - List", GET {endpoint}/openai/models at its GA api-version 2024-10-21, keyed with `api-key`.
  {
    channel: 'ch16',
    path: '/openai/models?api-version=2024-10-21',
    header: 'api-key',
    value: UPSTREAM_KEY,
    answer: {
      object: 'list',
      data: [
        { id: 'm-a', object: 'model', status: 'succeeded', lifecycle_status: 'generally-available', capabilities: { chat_completion: true, inference: true }, created_at: 1646126127 },
        { id: 'm-b', object: 'model', status: 'succeeded', lifecycle_status: 'preview', capabilities: { chat_completion: true, inference: true }, created_at: 1646126127 },
      ],
    },
  },
];

for (const c of cases) {
  t.test(`DISC on ${c.channel} lists upstream models through a Group's credential`, async (t) => {
    const { upstream, discover } = await startDiscovery(t, c.channel, (_req, res) => writeJson(res, 200, c.answer));
    const { status, text, body } = await discover();
    t.equal(status, 200, text);
    t.same(body.data.models, [
      { id: 'm-a', configured: true },
      { id: 'm-b', configured: false },
    ]);
    t.equal(body.data.truncated, false);
    const seen = upstream.requests[0]!;
    t.equal(seen.url, c.path);
    t.equal(seen.headers[c.header], c.value);
    if (c.header !== 'authorization') t.notOk('authorization' in seen.headers, `the key goes in ${c.header} only`);
    t.notMatch(text, UPSTREAM_KEY, 'the credential is not in the answer');
  });
}

/**
 * Each dialect's paging as its list API documents it: `pages` are the model ids of each page,
 * `answer` shapes page i (with `more` when another follows), `cursorOf` reads the cursor the
 * client sent (undefined on the first page) and says which page it names.
 */
const PAGING = [
  {
    // OpenAI-style cursor pages: `has_more`, the next page after the last item's id (`after`).
    channel: 'ch02',
    answer: (ids: string[], more: boolean) => ({ object: 'list', data: ids.map((id) => ({ id, object: 'model' })), has_more: more }),
    cursor: (url: URL) => url.searchParams.get('after'),
    cursorAfter: (ids: string[]) => ids.at(-1)!,
  },
  {
    // Anthropic GET /v1/models: `has_more`, `first_id`, `last_id`; the next page with `after_id`.
    channel: 'ch14',
    answer: (ids: string[], more: boolean) => ({ data: ids.map((id) => ({ type: 'model', id })), has_more: more, first_id: ids[0], last_id: ids.at(-1) }),
    cursor: (url: URL) => url.searchParams.get('after_id'),
    cursorAfter: (ids: string[]) => ids.at(-1)!,
  },
  {
    // Gemini GET /v1beta/models: an opaque `nextPageToken`, absent on the last page; sent back as `pageToken`.
    channel: 'ch15',
    answer: (ids: string[], more: boolean, token: string) => ({ models: ids.map((id) => ({ name: `models/${id}` })), ...(more ? { nextPageToken: token } : {}) }),
    cursor: (url: URL) => url.searchParams.get('pageToken'),
    cursorAfter: (_ids: string[], page: number) => `opaque-token-${page + 1}`,
  },
];

/** A paging upstream: the page a request's cursor names, or 400 for a cursor it never gave out. */
function pagedUpstream(p: (typeof PAGING)[number], pages: (page: number) => string[] | undefined, lastPage: (page: number) => boolean) {
  return (req: RecordedUpstreamRequest, res: ServerResponse) => {
    const url = new URL(req.url, 'http://upstream.test');
    const given = p.cursor(url);
    let page = 0;
    if (given !== null) {
      page = 1;
      while (pages(page - 1) !== undefined && p.cursorAfter(pages(page - 1)!, page - 1) !== given) page++;
      if (pages(page) === undefined) return writeJson(res, 400, { error: `unknown cursor ${given}` });
    }
    const ids = pages(page)!;
    writeJson(res, 200, p.answer(ids, !lastPage(page), p.cursorAfter(ids, page)));
  };
}

for (const p of PAGING) {
  t.test(`DISC on ${p.channel} follows the upstream's pages to the last one, in order`, async (t) => {
    const PAGES = [['m-a', 'm-b'], ['m-c', 'm-d'], ['m-e']];
    const { upstream, discover } = await startDiscovery(t, p.channel, pagedUpstream(p, (i) => PAGES[i], (i) => i === PAGES.length - 1));
    const { status, text, body } = await discover();
    t.equal(status, 200, text);
    t.same(
      body.data.models.map((m) => m.id),
      PAGES.flat(),
    );
    t.equal(body.data.truncated, false);
    t.equal(upstream.requests.length, PAGES.length, 'one request per page, none past the last');
    t.same(
      upstream.requests.map((r) => p.cursor(new URL(r.url, 'http://upstream.test'))),
      [null, p.cursorAfter(PAGES[0]!, 0), p.cursorAfter(PAGES[1]!, 1)],
      'each page asked for with the cursor the page before gave',
    );
  });

  t.test(`DISC on ${p.channel} stops at 50 pages when the upstream never says it is done, and says the list is truncated`, async (t) => {
    const { upstream, discover } = await startDiscovery(
      t,
      p.channel,
      pagedUpstream(p, (i) => (i < 1000 ? [`m-${i}`] : undefined), () => false),
    );
    const { status, text, body } = await discover();
    // The page cap documented in docs/management-api.md.
    t.equal(status, 200, text);
    t.equal(upstream.requests.length, 50);
    t.same(
      body.data.models.map((m) => m.id),
      Array.from({ length: 50 }, (_, i) => `m-${i}`),
    );
    t.equal(body.data.truncated, true);
  });
}

t.test('DISC stops when an upstream says there is more but hands out the same cursor again, and says the list is truncated', async (t) => {
  // Ignores after_id: always the first page, always has_more.
  const { upstream, discover } = await startDiscovery(t, 'ch14', (_req, res) => writeJson(res, 200, { data: [{ type: 'model', id: 'm-a' }, { type: 'model', id: 'm-b' }], has_more: true, first_id: 'm-a', last_id: 'm-b' }));
  const { status, text, body } = await discover();
  t.equal(status, 200, text);
  t.same(
    body.data.models.map((m) => m.id),
    ['m-a', 'm-b'],
    'each id once',
  );
  t.equal(body.data.truncated, true);
  t.equal(upstream.requests.length, 2, 'the first page, then the page after m-b, which was the same');
});

t.test('DISC with a key the upstream refuses: 502 discovery_failed with the upstream status, and the key is not in the answer', async (t) => {
  const { upstream, discover } = await startDiscovery(t, 'ch02', (req, res) =>
    // As some upstreams do: the refusal quotes the key it was given.
    writeJson(res, 401, { error: { message: `Incorrect API key provided: ${String(req.headers.authorization).slice(7)}`, type: 'invalid_request_error', code: 'invalid_api_key' } }),
  );
  const { status, text, body } = await discover();
  t.equal(status, 502);
  t.equal(body.code, 'BAD_GATEWAY');
  t.match(body.data, { reason: 'discovery_failed', upstream_status: 401 });
  t.equal(upstream.requests.length, 1);
  t.notMatch(text, UPSTREAM_KEY, 'the credential is not in the answer');
  t.notMatch(text, 'Incorrect API key', 'nor is the upstream\'s answer, which quotes it');
});

t.test('DISC gives up on an upstream that never answers after request_timeout_seconds: 502 discovery_failed, saying it timed out', async (t) => {
  // Takes the request and never answers (the 300 s client default would hang the call for minutes).
  const { upstream, server, discover } = await startDiscovery(t, 'ch02', () => {});
  await server.store.settings.save({ request_timeout_seconds: 1 });
  const { status, text, body } = await withTimeout(discover(), 20_000, 'the discovery answer');
  t.equal(status, 502, text);
  t.equal(body.code, 'BAD_GATEWAY');
  t.match(body.data, { reason: 'discovery_failed', detail: /timed out/ });
  t.notOk('upstream_status' in body.data, 'the upstream gave no status');
  t.equal(upstream.requests.length, 1, 'the upstream did get the list call');
});

t.test('DISC on a 200 answer that is not a model list: 502 discovery_failed, not an empty list', async (t) => {
  // An error body sent with 200, as some upstreams and gateways in front of them do; it quotes the key.
  const { discover } = await startDiscovery(t, 'ch02', (req, res) => writeJson(res, 200, { error: { message: `quota exceeded for ${String(req.headers.authorization).slice(7)}`, type: 'insufficient_quota' } }));
  const { status, text, body } = await discover();
  t.equal(status, 502, text);
  t.equal(body.code, 'BAD_GATEWAY');
  t.match(body.data, { reason: 'discovery_failed', detail: /no data array/ });
  t.notMatch(text, UPSTREAM_KEY, 'the credential is not in the answer');
});

t.test('DISC on a completions-style answer that is itself the array of models (Together\'s /v1/models): that is the whole list', async (t) => {
  const answer = [
    { id: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', object: 'model', created: 1733443200, type: 'chat', display_name: 'Llama 3.3 70B', context_length: 131072 },
    { id: 'm-a', object: 'model', type: 'embedding' },
  ];
  const { upstream, discover } = await startDiscovery(t, 'ch21', (_req, res) => writeJson(res, 200, answer), '/v1');
  const { status, text, body } = await discover();
  t.equal(status, 200, text);
  t.same(body.data.models, answer.map((m) => ({ id: m.id, configured: m.id === 'm-a' })));
  t.equal(body.data.truncated, false);
  t.equal(upstream.requests.length, 1, 'one list call: a bare array has no pages');
  const bare = await startDiscovery(t, 'ch14', (_req, res) => writeJson(res, 200, answer));
  t.match((await bare.discover()).body.data, { reason: 'discovery_failed', detail: /no data array/ }, 'messages style has no bare list');
});

t.test('DISC lists only the entries whose id is a non-empty string', async (t) => {
  const { discover } = await startDiscovery(t, 'ch02', (_req, res) => writeJson(res, 200, { object: 'list', data: [{ id: { x: 1 } }, { id: 42 }, { id: 'm-a' }, { id: '' }, { id: null }, {}, null, { id: 'm-b' }] }));
  const { status, text, body } = await discover();
  t.equal(status, 200, text);
  t.same(
    body.data.models.map((m) => m.id),
    ['m-a', 'm-b'],
  );
});

t.test('a base URL that ends with the version, as vendors document it, lists models at the same path', async (t) => {
  // A generate-style path keeps its staged version under a base URL that ends with a plain one (one address for every protocol).
  for (const [channel, base, expected] of [['ch02', '/v1', '/v1/models'], ['ch15', '/v1beta/', '/v1beta/models'], ['ch15', '/v1', '/v1beta/models'], ['ch02', '/v2ray', '/v2ray/v1/models']] as const) {
    const { upstream, discover } = await startDiscovery(t, channel, (_req, res) => writeJson(res, 200, channel === 'ch15' ? { models: [{ name: 'models/m-a' }] } : { object: 'list', data: [{ id: 'm-a' }] }), base);
    const { status, body } = await discover();
    t.equal(status, 200, channel);
    t.same(body.data.models, [{ id: 'm-a', configured: true }]);
    t.equal(upstream.requests[0]?.url.split('?')[0], expected, `${channel}: the base URL's version stands for the path's`);
  }
});

t.test('DISC on generate style reads a page without `models` as empty, as proto3 JSON omits an empty list', async (t) => {
  // Google's list calls answer an empty list as `{}`; a page after the last token may be one too.
  const empty = await startDiscovery(t, 'ch15', (_req, res) => writeJson(res, 200, {}));
  const alone = await empty.discover();
  t.equal(alone.status, 200, alone.text);
  t.same(alone.body.data.models, []);
  t.equal(alone.body.data.truncated, false);
  const paged = await startDiscovery(t, 'ch15', (req, res) =>
    writeJson(res, 200, new URL(req.url, 'http://upstream.test').searchParams.has('pageToken') ? {} : { models: [{ name: 'models/m-a' }], nextPageToken: 't-1' }),
  );
  const last = await paged.discover();
  t.equal(last.status, 200, last.text);
  t.same(last.body.data.models, [{ id: 'm-a', configured: true }]);
  t.equal(last.body.data.truncated, false);
  t.equal(paged.upstream.requests.length, 2);
  // An empty page that still names a next page: followed to the end.
  const tokenOnly = await startDiscovery(t, 'ch15', (req, res) => {
    const token = new URL(req.url, 'http://upstream.test').searchParams.get('pageToken');
    writeJson(res, 200, token === null ? { models: [{ name: 'models/m-a' }], nextPageToken: 't-1' } : token === 't-1' ? { nextPageToken: 't-2' } : { models: [{ name: 'models/m-b' }] });
  });
  const across = await tokenOnly.discover();
  t.equal(across.status, 200, across.text);
  t.same(across.body.data.models.map((m: { id: string }) => m.id), ['m-a', 'm-b']);
  t.equal(tokenOnly.upstream.requests.length, 3);
  // Anything more than the list's own members is not a list page: an error sent with 200 stays a failure.
  const error = await startDiscovery(t, 'ch15', (_req, res) => writeJson(res, 200, { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }));
  t.match((await error.discover()).body.data, { reason: 'discovery_failed', detail: /no models array/ });
});

t.test("DISC on generate style marks a model configured when the Group's upstream names it by Google's resource name (models/...)", async (t) => {
  // The data plane calls `models/m-a` and `m-a` alike (/v1beta/models/m-a:verb); the list names it `m-a`.
  const { server, discover } = await startDiscovery(t, 'ch15', (_req, res) => writeJson(res, 200, { models: [{ name: 'models/m-a' }, { name: 'models/m-b' }] }));
  const [group] = await server.store.groups.list();
  await server.store.groups.setModels(group!.id, [{ external: 'a', upstream: 'models/m-a' }]);
  const { status, text, body } = await discover();
  t.equal(status, 200, text);
  t.same(body.data.models, [
    { id: 'm-a', configured: true },
    { id: 'm-b', configured: false },
  ]);
});

t.test('DISC reads a list that opens with a byte order mark, as the data plane reads such an answer', async (t) => {
  // RFC 8259 §8.1 lets a parser ignore it; some compatible upstreams write one.
  const { discover } = await startDiscovery(t, 'ch02', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`\uFEFF${JSON.stringify({ object: 'list', data: [{ id: 'm-a' }, { id: 'm-b' }] })}`);
  });
  const { status, text, body } = await discover();
  t.equal(status, 200, text);
  t.same(
    body.data.models.map((m) => m.id),
    ['m-a', 'm-b'],
  );
});
