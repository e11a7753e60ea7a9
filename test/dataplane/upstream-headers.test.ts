import t from 'tap';
import {
  clientResponseHeaders,
  redactUrl,
  stripCredentialQuery,
  stripHopByHop,
  upstreamRequestHeaders,
} from '../../src/upstream/index.ts';

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
