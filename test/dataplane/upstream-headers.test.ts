import t from 'tap';
import {
  clientResponseHeaders,
  redactUrl,
  stripCredentialQuery,
  stripHopByHop,
  upstreamRequestHeaders,
} from '../../src/upstream/index.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { chatBody } from './helpers/dataplane-scenarios.ts';

t.test('hop-by-hop headers, and those named by Connection, are dropped', async (t) => {
  const out = stripHopByHop({
    connection: 'keep-alive, X-Trace-Hop',
    'keep-alive': 'timeout=5',
    'transfer-encoding': 'chunked',
    te: 'trailers',
    trailer: 'x-checksum',
    upgrade: 'websocket',
    'proxy-authorization': 'Basic abc',
    'proxy-connection': 'keep-alive',
    'x-trace-hop': '1',
    'content-type': 'application/json',
    'set-cookie': ['a=1', 'b=2'],
    absent: undefined,
  });
  t.same(out, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
});

t.test('request headers to an upstream: no client credential, host, expect or accept-encoding', async (t) => {
  const out = upstreamRequestHeaders({
    host: 'gateway.local',
    authorization: 'Bearer sk-client-access-key',
    'x-api-key': 'client-key',
    'x-goog-api-key': 'client-key',
    'api-key': 'client-key',
    expect: '100-continue',
    'accept-encoding': 'gzip, br',
    connection: 'keep-alive',
    'content-type': 'application/json',
    'content-length': '42',
    'anthropic-version': '2023-06-01',
    'openai-beta': 'assistants=v2',
    'x-request-id': 'abc',
  });
  t.same(out, {
    'content-type': 'application/json',
    'content-length': '42',
    'anthropic-version': '2023-06-01',
    'openai-beta': 'assistants=v2',
    'x-request-id': 'abc',
  });
});

t.test('response headers to a client keep what matters', async (t) => {
  const out = clientResponseHeaders({
    'content-type': 'text/event-stream',
    'retry-after': '7',
    'x-request-id': 'req_1',
    'request-id': 'req_2',
    'transfer-encoding': 'chunked',
    connection: 'close',
  });
  t.same(out, { 'content-type': 'text/event-stream', 'retry-after': '7', 'x-request-id': 'req_1', 'request-id': 'req_2' });
});

t.test('a body the relay may change goes without the upstream\'s content-length', async (t) => {
  const upstream = { 'content-type': 'text/event-stream', 'content-length': '120', 'x-request-id': 'req_1', connection: 'keep-alive', 'keep-alive': 'timeout=5' };
  t.same(clientResponseHeaders(upstream, true), { 'content-type': 'text/event-stream', 'x-request-id': 'req_1' });
  t.same(clientResponseHeaders(upstream), { 'content-type': 'text/event-stream', 'content-length': '120', 'x-request-id': 'req_1' }, 'kept for a body passed on unchanged');
});

t.test('the key query parameter is removed, other parameters keep their encoding', async (t) => {
  t.equal(stripCredentialQuery('/v1beta/models/m:streamGenerateContent?alt=sse&key=AIza123'), '/v1beta/models/m:streamGenerateContent?alt=sse');
  t.equal(stripCredentialQuery('/v1/x?key=abc'), '/v1/x');
  t.equal(stripCredentialQuery('/v1/x?k%65y=abc&a=%2F+b&key&keys=1'), '/v1/x?a=%2F+b&keys=1');
  t.equal(stripCredentialQuery('/v1/x'), '/v1/x');
  t.equal(stripCredentialQuery('/v1/x?'), '/v1/x');
});

t.test('redactUrl hides user info and query values', async (t) => {
  t.equal(redactUrl('socks5://user:secret@10.0.0.1:1080'), 'socks5://***@10.0.0.1:1080');
  t.equal(redactUrl('https://api.example.com/v1?key=abc&alt=sse'), 'https://api.example.com/v1?key=***&alt=***');
  t.equal(redactUrl('not a url'), '[invalid url]');
});

// An upstream (or a relay in front of it) that echoes the credential it received, on a
// successful or redirecting answer: no credential header reaches the client, and the secret
// is masked (first four ... last four, as error answers have it) wherever a value carries it.
const ECHOED_KEY = 'sk-upstream-echoed-0123456789';
const CREDENTIAL_HEADER_NAMES = ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key'];

for (const c of [
  { status: 200, headers: (auth: string) => ({ 'content-type': 'application/json', 'x-echo-credential': auth }), body: '{"id":"chatcmpl-1","object":"chat.completion","choices":[]}' },
  { status: 302, headers: (auth: string) => ({ location: `https://elsewhere.invalid/retry?key=${encodeURIComponent(auth)}` }), body: '' },
]) {
  t.test(`a ${c.status} echoing the upstream credential: no credential header, the secret masked in the other values`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
      const auth = String(req.headers.authorization);
      res.writeHead(c.status, { ...c.headers(auth), authorization: auth, 'x-api-key': auth, 'x-goog-api-key': auth, 'api-key': auth, 'set-cookie': [`a=${auth}`, 'b=1'] });
      res.end(c.body);
    });
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [ECHOED_KEY] });
    // The first request reads the secret from the store; the second takes the path for a cached one.
    for (const pass of ['secret not yet cached', 'secret cached']) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', redirect: 'manual', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
      t.equal(res.status, c.status, pass);
      t.equal(upstream.requests.at(-1)?.headers.authorization, `Bearer ${ECHOED_KEY}`, `${pass}: the upstream got the credential it echoes`);
      for (const name of CREDENTIAL_HEADER_NAMES) t.equal(res.headers.get(name), null, `${pass}: no ${name} header`);
      const all = [...res.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
      t.notOk(all.includes(ECHOED_KEY), `${pass}: the secret is in no header value`);
      const masked = 'sk-u...6789';
      if (c.status === 200) t.equal(res.headers.get('x-echo-credential'), `Bearer ${masked}`);
      else t.equal(res.headers.get('location'), `https://elsewhere.invalid/retry?key=${encodeURIComponent(`Bearer ${masked}`)}`);
      t.same(res.headers.getSetCookie(), [`a=Bearer ${masked}`, 'b=1'], `${pass}: each value of a repeated header masked`);
      t.equal(await res.text(), c.body, `${pass}: the body below 400 goes as sent`);
    }
  });
}
