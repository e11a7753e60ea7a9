import { request } from 'node:http';
import t, { type Test } from 'tap';
import { stripCredentialQuery } from '../../src/upstream/index.ts';
import { seedRoute, startDataPlane, startUpstream } from './helpers/data-plane-harness.ts';

// The data plane reads the AccessKey from `new URLSearchParams(query)` and forwards
// `stripCredentialQuery(path + '?' + query)`. The two must agree on which parameter is `key`:
// one the first sees and the second keeps goes upstream with the client's own key.

/** What the data plane reads from the query of a target (after its first `?`). */
function entriesOf(target: string): Array<[string, string]> {
  const q = target.indexOf('?');
  return q < 0 ? [] : [...new URLSearchParams(target.slice(q + 1))];
}

/** Whatever presented `key` is gone, and every other parameter reads as before. */
function checkStripped(t: Test, query: string): void {
  const target = `/v1/x?${query}`;
  const stripped = stripCredentialQuery(target);
  t.same(
    entriesOf(stripped),
    entriesOf(target).filter(([name]) => name !== 'key'),
    `${JSON.stringify(query)} -> ${JSON.stringify(stripped)}`,
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
];

t.test('URLSearchParams and stripping agree on `key` for tricky spellings', async (t) => {
  for (const query of TRICKY) checkStripped(t, query);
});

t.test('they agree on queries built at random from the pieces parsers disagree on', async (t) => {
  const PIECES = ['key', 'k%65y', '%6Bey', '%6b%65%79', '?', '??', '&', '&&', '=', '+', '%20', ';', '#', '%', '%zz', '%FF', 'K', 'a'];
  // A fixed seed (mulberry32): the same queries on every run, so a failure reproduces.
  let seed = 0x5eed;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let r = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
  let withKey = 0;
  for (let i = 0; i < 3000; i++) {
    const length = 1 + Math.floor(random() * 8);
    const query = Array.from({ length }, () => PIECES[Math.floor(random() * PIECES.length)]).join('');
    if (new URLSearchParams(query).has('key')) withKey++;
    const target = `/v1/x?${query}`;
    const stripped = stripCredentialQuery(target);
    const expected = entriesOf(target).filter(([name]) => name !== 'key');
    // One assertion per disagreement only: thousands of passing ones would drown the output.
    if (JSON.stringify(entriesOf(stripped)) !== JSON.stringify(expected)) t.fail(`${JSON.stringify(query)} -> ${JSON.stringify(stripped)}`);
  }
  t.ok(withKey > 200, `enough of them present a key (${withKey})`);
});

t.test('other parameters keep their raw spelling, a leading `?` of the first included', async (t) => {
  t.equal(stripCredentialQuery('/v1/x??key=K&a=%2F+b'), '/v1/x?a=%2F+b');
  t.equal(stripCredentialQuery('/v1/x??a=%2F+b&key=K'), '/v1/x??a=%2F+b');
  t.equal(stripCredentialQuery('/v1/x??a=1'), '/v1/x??a=1');
  t.equal(stripCredentialQuery('/v1/x???key=K'), '/v1/x???key=K', 'URLSearchParams drops only one `?`: the name is `?key`');
  t.equal(stripCredentialQuery('/v1/x?a=1&?key=K'), '/v1/x?a=1&?key=K', 'after `&` the `?` is part of the name');
  t.equal(stripCredentialQuery('/v1/x??'), '/v1/x');
  t.equal(stripCredentialQuery('/v1/x?key=K&?a=1'), '/v1/x?&?a=1', 'a later `?` does not become the one URLSearchParams drops');
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

t.test('through the server: a key the data plane reads never reaches the upstream', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"x","object":"chat.completion","choices":[]}');
  });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  const path = '/v1/chat/completions';
  const cases: Array<[string, string]> = [
    [`??key=${keyValue}`, path],
    [`??key=${keyValue}&a=%2F+b`, `${path}?a=%2F+b`],
    [`??a=1&key=${keyValue}`, `${path}??a=1`],
    [`?%6Bey=${keyValue}`, path],
    [`?&&k%65y=${keyValue}&&a=1`, `${path}?a=1`],
    [`?a=1#&key=${keyValue}`, `${path}?a=1#`],
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

t.test('through the server: a spelling the data plane does not read as `key` does not authenticate', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.end('{}');
  });
  t.teardown(() => upstream.close());
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  for (const suffix of [`???key=${keyValue}`, `?a=1&?key=${keyValue}`, `?key+=${keyValue}`, `?a=1;key=${keyValue}`, `?%3Fkey=${keyValue}`]) {
    t.equal(await post(gw.url, `/v1/chat/completions${suffix}`), 401, `${suffix.replace(keyValue, 'KEY')} is refused`);
  }
  t.equal(upstream.requests.length, 0, 'nothing went upstream');
});
