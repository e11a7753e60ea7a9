import { request, type IncomingHttpHeaders } from 'node:http';
import OpenAI from 'openai';
import t from 'tap';
import { WebSocket } from 'ws';
import {
  clientResponseHeaders,
  isClientCredentialQueryName,
  redactUrl,
  stripHopByHop,
  upstreamRequestHeaders,
  withoutQueryParams,
} from '../../src/upstream/index.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson } from './helpers/dataplane-scenarios.ts';
import { realtimeRoute, startWsUpstream, upgradeStatus } from './helpers/ws-upstream.ts';

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

t.test('request headers to an upstream: no client credential or account scope, host, expect or origin, and accept-encoding identity in place of the client\'s', async (t) => {
  const out = upstreamRequestHeaders({
    host: 'gateway.local',
    authorization: 'Bearer sk-client-access-key',
    'x-api-key': 'client-key',
    'x-goog-api-key': 'client-key',
    'api-key': 'client-key',
    'openai-organization': 'org-client',
    'openai-project': 'proj-client',
    expect: '100-continue',
    'accept-encoding': 'gzip, br',
    connection: 'keep-alive',
    'content-type': 'application/json',
    'content-length': '42',
    'anthropic-version': '2023-06-01',
    'openai-beta': 'assistants=v2',
    'x-request-id': 'abc',
    origin: 'https://app.example',
    'anthropic-dangerous-direct-browser-access': 'true',
    referer: 'https://app.example/chat',
  });
  t.same(out, {
    'content-type': 'application/json',
    'content-length': '42',
    'anthropic-version': '2023-06-01',
    'openai-beta': 'assistants=v2',
    'x-request-id': 'abc',
    // Google judges a key's referrer restriction by it; a refusal then is the client's.
    referer: 'https://app.example/chat',
    // RFC 9110 §12.5.3: no Accept-Encoding would allow any coding, and usage is read from the answer.
    'accept-encoding': 'identity',
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
  const strip = (target: string) => withoutQueryParams(target, isClientCredentialQueryName);
  t.equal(strip('/v1beta/models/m:streamGenerateContent?alt=sse&key=AIza123'), '/v1beta/models/m:streamGenerateContent?alt=sse');
  t.equal(strip('/v1/x?key=abc'), '/v1/x');
  t.equal(strip('/v1/x?k%65y=abc&a=%2F+b&key&keys=1'), '/v1/x?a=%2F+b&keys=1');
  t.equal(strip('/v1/x'), '/v1/x');
  t.equal(strip('/v1/x?'), '/v1/x');
});

t.test('redactUrl hides user info and query values', async (t) => {
  t.equal(redactUrl('socks5://user:secret@10.0.0.1:1080'), 'socks5://***@10.0.0.1:1080');
  t.equal(redactUrl('https://api.example.com/v1?key=abc&alt=sse'), 'https://api.example.com/v1?key=***&alt=***');
  t.equal(redactUrl('not a url'), '[invalid url]');
  // Without `//` a URL of a scheme like socks5 has no host and no user: all of it is an opaque path, which may hold the login.
  t.equal(redactUrl('socks5:user:secret@10.0.0.1:1080'), 'socks5:***');
  t.equal(redactUrl('socks5:/user:secret@10.0.0.1:1080'), 'socks5:***');
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
      res.writeHead(c.status, { ...c.headers(auth), authorization: auth, 'x-api-key': auth, 'x-goog-api-key': auth, 'api-key': auth, 'x-echo-list': [`a=${auth}`, 'b=1'] });
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
      const masked = '***6789';
      if (c.status === 200) t.equal(res.headers.get('x-echo-credential'), `Bearer ${masked}`);
      else t.equal(res.headers.get('location'), `https://elsewhere.invalid/retry?key=${encodeURIComponent(`Bearer ${masked}`)}`);
      t.equal(res.headers.get('x-echo-list'), `a=Bearer ${masked}, b=1`, `${pass}: each value of a repeated header masked`);
      t.equal(await res.text(), c.body, `${pass}: the body, which holds no secret, as sent`);
    }
  });
}

// A key with `/`, `+` and `=` echoed as real encoders write it (issue 4 item 2), written out by
// hand: Python's quote (`/` left), percent-encoding in lower-case hex, .NET's System.Text.Json (`+` as \u002B).
const ESCAPING_KEY = 'sk-up/SECRET+val=0123456789abcdefXYZ';
const ESCAPING_MASKED = '***fXYZ';
const ECHOED_FORMS = ['sk-up/SECRET%2Bval%3D0123456789abcdefXYZ', 'sk-up%2fSECRET%2bval%3d0123456789abcdefXYZ', 'sk-up/SECRET\\u002Bval=0123456789abcdefXYZ'];

// A 400: not a failover status, so the credential is still there for the second pass.
for (const status of [200, 400]) {
  t.test(`a ${status} echoing a key with / + = in encoded forms: masked in its headers${status === 400 ? ' and body' : ''}`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
      const headers = Object.fromEntries(ECHOED_FORMS.map((form, i) => [`x-echo-${i}`, `key=${form}`]));
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      // Written as JSON text, so that `\\u002B` is the escape it is there.
      res.end(status === 200 ? completionJson('vendor-chat') : `{"error":{"message":"${ECHOED_FORMS.join(' ')}"}}`);
    });
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [ESCAPING_KEY] });
    for (const pass of ['secret not yet cached', 'secret cached']) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
      t.equal(res.status, status, pass);
      ECHOED_FORMS.forEach((_, i) => t.equal(res.headers.get(`x-echo-${i}`), `key=${ESCAPING_MASKED}`, `${pass}: header ${i} masked`));
      const body = await res.text();
      if (status === 400) t.equal(body, `{"error":{"message":"${ECHOED_FORMS.map(() => ESCAPING_MASKED).join(' ')}"}}`, `${pass}: every form in the body masked`);
      else t.equal(body, completionJson('vendor-chat'), `${pass}: the 200 body as sent`);
    }
  });
}

// OpenAI-Organization and OpenAI-Project name the account scope of the key they come with. A
// client's (the openai SDK sends them from OPENAI_ORG_ID / OPENAI_PROJECT_ID) name the client's
// own account, which an upstream keyed to another organization refuses with 401, as OpenAI does.
const ACCOUNT_SCOPE = ['openai-organization', 'openai-project'];
const mismatchedOrganization = JSON.stringify({ error: { message: 'OpenAI-Organization header should match organization for API key', type: 'invalid_request_error', param: null, code: 'mismatched_organization' } });
const carriesScope = (headers: IncomingHttpHeaders) => ACCOUNT_SCOPE.some((h) => headers[h] !== undefined);

t.test('an openai SDK client with organization and project: neither reaches the upstream, the credentials stay enabled, the upstream\'s own do not come back', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    if (carriesScope(req.headers)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(mismatchedOrganization);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'openai-organization': 'org-gateway-operator', 'openai-project': 'proj_gateway_operator' }).end(completionJson('vendor-chat'));
  });
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: ['sk-upstream-a', 'sk-upstream-b'] });
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, organization: 'org-x', project: 'proj-y', maxRetries: 0 });

  const { data, response } = await client.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hello' }] }).withResponse();
  t.equal(data.choices[0]?.message.content, 'hi');
  t.equal(upstream.requests.length, 1, 'one attempt, not refused');
  for (const h of ACCOUNT_SCOPE) t.equal(upstream.requests[0]?.headers[h], undefined, `no ${h} upstream`);
  for (const h of ACCOUNT_SCOPE) t.equal(response.headers.get(h), null, `the upstream's ${h} (the operator's account) not passed back`);
  const credentials = await gw.store.credentials.list(group.id);
  t.same(credentials.map((c) => [c.enabled, c.disabled_reason]), [[true, null], [true, null]], 'every credential still enabled');
});

t.test('a WebSocket upgrade with OpenAI-Organization and OpenAI-Project: neither reaches the upstream, the credential stays enabled', async (t) => {
  const upstream = await startWsUpstream({ refuse: (req) => (carriesScope(req.headers) ? { status: 401, headers: { 'content-type': 'application/json' }, body: mismatchedOrganization } : undefined) });
  t.teardown(() => upstream.close());
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url);
  t.equal(await upgradeStatus(wsUrl, { headers: { 'openai-organization': 'org-x', 'openai-project': 'proj-y' } }), 101, 'the session opened');
  t.equal(upstream.seen.length, 1);
  for (const h of ACCOUNT_SCOPE) t.equal(upstream.seen[0]?.headers[h], undefined, `no ${h} upstream`);
  const credentials = await gw.store.credentials.list(group.id);
  t.same(credentials.map((c) => [c.enabled, c.disabled_reason]), [[true, null]], 'the credential still enabled');
});

// Who the client is, where it came through, the page it runs in and its cookies are not the upstream's business; the
// operator's cookies with the upstream and what the upstream says of its own origin are not the client's.
const CLIENT_ONLY = { cookie: 'sso=corp', forwarded: 'for=198.51.100.7;host=evil.example', 'x-forwarded-for': '198.51.100.7', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http', 'x-forwarded-port': '80', 'x-forwarded-prefix': '/evil', 'x-forwarded-server': 'evil.example', 'x-forwarded-ssl': 'off', 'x-real-ip': '198.51.100.7', 'true-client-ip': '198.51.100.7', 'cf-connecting-ip': '198.51.100.7', 'x-client-ip': '198.51.100.7', 'x-cluster-client-ip': '198.51.100.7', 'fastly-client-ip': '198.51.100.7', 'x-original-forwarded-for': '198.51.100.7', via: '1.1 evil.example', origin: 'https://app.example', 'anthropic-dangerous-direct-browser-access': 'true' };
const UPSTREAM_ONLY = { 'set-cookie': ['__cf_bm=operator; Domain=.api.vendor.example; HttpOnly', '_cfuvid=abc; Path=/'], 'alt-svc': 'h3=":443"; ma=86400', 'strict-transport-security': 'max-age=31536000' };

t.test('through the server: the client\'s cookies and forwarding headers do not reach the upstream, nor do its set-cookie, alt-svc and HSTS come back', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'up-1', ...UPSTREAM_ONLY });
    res.end(completionJson('vendor-chat'));
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json', 'x-trace': 'kept', ...CLIENT_ONLY }, body: chatBody('team-chat') });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const seen = upstream.requests.at(-1)!.headers;
  for (const name of Object.keys(CLIENT_ONLY)) t.equal(seen[name], undefined, `no ${name} upstream`);
  t.equal(seen['x-trace'], 'kept', 'other client headers still go');
  for (const name of Object.keys(UPSTREAM_ONLY)) t.equal(res.headers.get(name), null, `no ${name} to the client`);
  t.equal(res.headers.get('x-request-id'), 'up-1', 'other upstream headers still come back');
});

// docs/data-plane.md step 9: a repeated header goes as its several lines; a chunked answer's trailer fields (and its Trailer header) are not passed on.
t.test('through the server: repeated link headers come back as several lines; an upstream trailer does not', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', link: ['<https://a.example>; rel="a"', '<https://b.example>; rel="b"'], trailer: 'x-upstream-digest' });
    res.write(completionJson('vendor-chat'));
    res.addTrailers({ 'x-upstream-digest': 'sha=1' });
    res.end();
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'] });
  const answer = await new Promise<{ status: number; raw: string[]; trailers: string[]; body: string }>((resolve, reject) => {
    const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, raw: res.rawHeaders, trailers: res.rawTrailers, body }));
    });
    req.on('error', reject);
    req.end(chatBody('team-chat'));
  });
  t.equal(answer.status, 200);
  const links = answer.raw.filter((_v, i) => i % 2 === 1 && answer.raw[i - 1]!.toLowerCase() === 'link');
  t.same(links, ['<https://a.example>; rel="a"', '<https://b.example>; rel="b"'], 'two link lines, as sent');
  t.notOk(answer.raw.some((v, i) => i % 2 === 0 && v.toLowerCase() === 'trailer'), 'no Trailer header');
  t.same(answer.trailers, [], 'no trailer fields');
  t.equal(answer.body, completionJson('vendor-chat'), 'the body whole');
});

t.test('through the server: a WebSocket session the same way, on the upgrade and on the 101', async (t) => {
  const upstream = await startWsUpstream({ handshakeHeaders: () => ['x-request-id: up-ws-1', ...Object.entries(UPSTREAM_ONLY).flatMap(([name, v]) => (Array.isArray(v) ? v : [v]).map((value) => `${name}: ${value}`))] });
  t.teardown(() => upstream.close());
  const { wsUrl } = await realtimeRoute(t, upstream.url);
  const ws = new WebSocket(wsUrl, { headers: { 'x-trace': 'kept', ...CLIENT_ONLY } });
  const answer = await new Promise<IncomingHttpHeaders | undefined>((resolve) => {
    ws.once('upgrade', (res) => resolve(res.headers));
    ws.once('unexpected-response', () => resolve(undefined));
    ws.once('error', () => resolve(undefined));
  });
  ws.terminate();
  t.ok(answer, 'the session opened');
  const seen = upstream.seen[0]!.headers;
  for (const name of Object.keys(CLIENT_ONLY)) t.equal(seen[name], undefined, `no ${name} upstream`);
  t.equal(seen['x-trace'], 'kept', 'other client headers still go');
  for (const name of Object.keys(UPSTREAM_ONLY)) t.equal(answer?.[name], undefined, `no ${name} on the client's 101`);
  t.equal(answer?.['x-request-id'], 'up-ws-1', 'other headers of the upstream\'s 101 still come back');
});
