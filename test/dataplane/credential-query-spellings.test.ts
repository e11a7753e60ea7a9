import { request } from 'node:http';
import t, { type Test } from 'tap';
import { forwardedQuery } from '../../src/dataplane/forwarded-query.ts';
import { seedRoute, startDataPlane, startUpstream } from './helpers/data-plane-harness.ts';
import { seeded } from '../helpers/seeded-random.ts';

// The data plane reads the AccessKey from `new URLSearchParams(query)` and forwards
// `forwardedQuery(style, '?' + query, ...)`. The two must agree on which parameter is `key`:
// one the first sees and the second keeps goes upstream with the client's own key. Google reads
// `$key` (`%24key` as sent) as `key`, and so with the OAuth token parameters: none goes upstream,
// nor `api-key` (a deployment-style client's key), nor, in the generate style, a `fields` mask.

/** The decoded names that never go upstream. */
const CREDENTIAL_NAMES = new Set(['key', 'api-key', 'access_token', 'oauth_token', '$key', '$api-key', '$access_token', '$oauth_token']);
/** The generate style drops Google's response filter too. */
const DROPPED_NAMES = { completions: CREDENTIAL_NAMES, generate: new Set([...CREDENTIAL_NAMES, 'fields', '$fields']) };
type Style = keyof typeof DROPPED_NAMES;
const STYLES = Object.keys(DROPPED_NAMES) as Style[];

/** What the data plane reads from the query of a target (after its first `?`). */
function entriesOf(target: string): Array<[string, string]> {
  const q = target.indexOf('?');
  return q < 0 ? [] : [...new URLSearchParams(target.slice(q + 1))];
}

/** The target as the data plane forwards it in `style` (handle-data-request.ts). */
function forwarded(style: Style, target: string): string {
  const q = target.indexOf('?');
  if (q < 0) return target;
  const search = target.slice(q);
  return target.slice(0, q) + forwardedQuery(style, search, new URLSearchParams(search.slice(1)));
}

/** Whatever presented `key` (and, in the generate style, `fields`) is gone, and every other parameter reads as before. */
function checkStripped(t: Test, style: Style, query: string): void {
  const target = `/v1/x?${query}`;
  const stripped = forwarded(style, target);
  t.same(
    entriesOf(stripped),
    entriesOf(target).filter(([name]) => !DROPPED_NAMES[style].has(name)),
    `${style}: ${JSON.stringify(query)} -> ${JSON.stringify(stripped)}`,
  );
}

/** Queries as they follow a target's first `?`. */
const TRICKY = [
  '?key=K',
  '?key=K&a=1',
  '?a=1&key=K',
  '??key=K',
  '?&key=K',
  '%6Bey=K',
  '%6bey=K',
  'k%65y=K',
  '%6B%65%79=K',
  'key+=K',
  'k+ey=K',
  '+key=K',
  'key%20=K',
  'a=1&&key=K&&b=2',
  '&&&key=K',
  'a=1;key=K',
  'key=K;a=1',
  'a=1#&key=K',
  'key=K#frag',
  '#key=K',
  'a=1&?key=K',
  '?a=1&?key=K',
  '%3Fkey=K',
  'key',
  'key=',
  'key=&key=K',
  'key=K=K',
  '=K&key',
  '%zz&key=K',
  '%FF=1&k%65y=K',
  'KEY=K&Key=K',
  'keys=K&akey=K',
  '$key=K',
  '%24key=K',
  '%24k%65y=K',
  'a=1&$key=K&b=2',
  '$$key=K',
  '%24%24key=K',
  'a$key=K',
  '$keys=K',
  '$access_token=T&$oauth_token=T',
  '%24access_token=T&a=1',
  '??$key=K',
  '$=K&$key',
  'api-key=K',
  'api-key=K&a=1&$api-key=K',
  'api%2Dkey=K',
  'api_key=K&apikey=K',
  'fields=a&%24fields=b&k%65y=K',
  'fields',
];

t.test('URLSearchParams and forwardedQuery agree on `key` for tricky spellings, in both styles', async (t) => {
  for (const style of STYLES) for (const query of TRICKY) checkStripped(t, style, query);
});

t.test('they agree on queries built at random from the pieces parsers disagree on', async (t) => {
  const PIECES = ['key', 'k%65y', '%6Bey', '%6b%65%79', 'api-', '$', '%24', 'oauth_token', 'fields', '?', '??', '&', '&&', '=', '+', '%20', ';', '#', '%', '%zz', '%FF', 'K', 'a'];
  // A fixed seed: the same queries on every run, so a failure reproduces.
  const random = seeded(0x5eed);
  let withKey = 0;
  let withAlias = 0;
  let withFields = 0;
  for (let i = 0; i < 3000; i++) {
    const length = 1 + Math.floor(random() * 8);
    const query = Array.from({ length }, () => PIECES[Math.floor(random() * PIECES.length)]).join('');
    const names = [...new URLSearchParams(query).keys()];
    if (names.some((name) => CREDENTIAL_NAMES.has(name))) withKey++;
    if (names.some((name) => name.startsWith('$') && CREDENTIAL_NAMES.has(name))) withAlias++;
    if (names.some((name) => DROPPED_NAMES.generate.has(name) && !CREDENTIAL_NAMES.has(name))) withFields++;
    const target = `/v1/x?${query}`;
    for (const style of STYLES) {
      const stripped = forwarded(style, target);
      const expected = entriesOf(target).filter(([name]) => !DROPPED_NAMES[style].has(name));
      // One assertion per disagreement only: thousands of passing ones would drown the output.
      if (JSON.stringify(entriesOf(stripped)) !== JSON.stringify(expected)) t.fail(`${style}: ${JSON.stringify(query)} -> ${JSON.stringify(stripped)}`);
    }
  }
  t.ok(withKey > 200, `enough of them present a key (${withKey})`);
  t.ok(withAlias > 10, `enough of them present a \`$\` alias (${withAlias})`);
  t.ok(withFields > 10, `enough of them present a \`fields\` mask (${withFields})`);
});

t.test('other parameters keep their raw spelling, a leading `?` of the first included', async (t) => {
  t.equal(forwarded('completions', '/v1/x??key=K&a=%2F+b'), '/v1/x?a=%2F+b');
  t.equal(forwarded('completions', '/v1/x??a=%2F+b&key=K'), '/v1/x??a=%2F+b');
  t.equal(forwarded('completions', '/v1/x??a=1'), '/v1/x??a=1');
  t.equal(forwarded('completions', '/v1/x???key=K'), '/v1/x???key=K', 'URLSearchParams drops only one `?`: the name is `?key`');
  t.equal(forwarded('completions', '/v1/x?a=1&?key=K'), '/v1/x?a=1&?key=K', 'after `&` the `?` is part of the name');
  t.equal(forwarded('completions', '/v1/x??'), '/v1/x');
  t.equal(forwarded('completions', '/v1/x?key=K&?a=1'), '/v1/x?&?a=1', 'a later `?` does not become the one URLSearchParams drops');
});

/** Sends `target` exactly as written (fetch would drop a `#` fragment). */
function post(base: string, target: string): Promise<number> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: target, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'm', messages: [] }));
  });
}

/** A completions upstream (answering an empty completion), the data plane in front of it and an x-completions key; all stopped at the test's end. */
async function completionsRoute(t: Test) {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"x","object":"chat.completion","choices":[]}');
  });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  return { upstream, gw, keyValue };
}

t.test('through the server: a key the data plane reads never reaches the upstream', async (t) => {
  const { upstream, gw, keyValue } = await completionsRoute(t);
  const path = '/v1/chat/completions';
  const cases: Array<[string, string]> = [
    [`??key=${keyValue}`, path],
    [`??key=${keyValue}&a=%2F+b`, `${path}?a=%2F+b`],
    [`??a=1&key=${keyValue}`, `${path}??a=1`],
    [`?%6Bey=${keyValue}`, path],
    [`?&&k%65y=${keyValue}&&a=1`, `${path}?a=1`],
    // A fragment is no part of the query: not read, and not forwarded (RFC 9112 §3.2).
    [`?a=%2F+b&key=${keyValue}#frag`, `${path}?a=%2F+b`],
    [`?key=${keyValue}#&key=other`, path],
    [`?key=${keyValue}&$key=other&%24access_token=T&$oauth_token=T&keep=1`, `${path}?keep=1`],
  ];
  for (const [suffix, forwarded] of cases) {
    const shown = suffix.replace(keyValue, 'KEY');
    t.equal(await post(gw.url, `${path}${suffix}`), 200, `${shown} authenticates`);
    const seen = upstream.requests.at(-1)?.url ?? '';
    t.notOk(seen.includes(keyValue), `${shown}: the upstream did not receive the key`);
    t.equal(seen, forwarded, `${shown}: the other parameters as sent`);
  }
  t.equal(upstream.requests.length, cases.length);
});

t.test('through the server: an `api-key` query parameter (a deployment-style client\'s key) never reaches the upstream, and is not read as the AccessKey', async (t) => {
  const { upstream, gw, keyValue } = await completionsRoute(t);
  const path = '/v1/chat/completions';
  t.equal(await post(gw.url, `${path}?key=${keyValue}&api-key=sk-client-own&a=1&%24api-key=sk-other`), 200, 'authenticated by `key`');
  t.equal(upstream.requests.at(-1)?.url, `${path}?a=1`, 'forwarded without `api-key` or its `$` alias');
  t.equal(await post(gw.url, `${path}?api-key=${keyValue}`), 401, 'a key in `api-key` alone does not authenticate');
  t.equal(upstream.requests.length, 1, 'the refused one went nowhere');
});

t.test('through the server: a spelling the data plane does not read as `key` does not authenticate', async (t) => {
  const { upstream, gw, keyValue } = await completionsRoute(t);
  for (const suffix of [`???key=${keyValue}`, `?a=1&?key=${keyValue}`, `?key+=${keyValue}`, `?a=1;key=${keyValue}`, `?%3Fkey=${keyValue}`, `?a=1#&key=${keyValue}`, `#?key=${keyValue}`]) {
    t.equal(await post(gw.url, `/v1/chat/completions${suffix}`), 401, `${suffix.replace(keyValue, 'KEY')} is refused`);
  }
  t.equal(upstream.requests.length, 0, 'nothing went upstream');
});

// Google's front end, as it judges keys: a `key` or `$key` parameter or an x-goog-api-key header
// that is not the operator's is 400 API_KEY_INVALID, which disables the credential it came with.
const OPERATOR_KEYS = ['AIza-operator-key-a', 'AIza-operator-key-b'];

t.test('through the server: a `$key` or `%24key` a client adds to a generate request never reaches Google, and no credential is disabled', async (t) => {
  const upstream = await startUpstream((req, res) => {
    const query = new URLSearchParams(req.url.split('?')[1] ?? '');
    const presented = [query.get('key'), query.get('$key'), req.headers['x-goog-api-key']].filter((k) => k !== null && k !== undefined);
    if (presented.some((k) => !OPERATOR_KEYS.includes(String(k)))) {
      res.writeHead(400, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }] } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ candidates: [], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } }));
  });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'team-gen', upstream: 'vendor-gen' }], protocols: ['x-generate'], upstreamKeys: OPERATOR_KEYS });
  const path = '/v1beta/models/team-gen:generateContent';
  for (const [suffix, forwarded] of [
    ['?$key=not-a-key', ''],
    ['?%24key=not-a-key&a=%2F+b', '?a=%2F+b'],
    ['?$access_token=ya29.client&%24oauth_token=client-token', ''],
  ]) {
    const res = await fetch(`${gw.url}${path}${suffix}`, { method: 'POST', headers: { 'x-goog-api-key': keyValue, 'content-type': 'application/json' }, body: '{"contents":[]}' });
    t.equal(res.status, 200, `${suffix}: answered`);
    await res.arrayBuffer();
    t.equal(upstream.requests.at(-1)?.url, `/v1beta/models/vendor-gen:generateContent${forwarded}`, `${suffix}: forwarded without it`);
  }
  t.equal(upstream.requests.length, 3, 'one attempt each');
  const credentials = await gw.store.credentials.list(group.id);
  t.same(credentials.map((c) => [c.enabled, c.disabled_reason]), [[true, null], [true, null]], 'every credential still enabled');
});
