import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const ok = (_req: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
  res.end('{"ok":true}');
};

/** One HTTP/1.1 request as bytes, its body in one chunk of chunked framing, under whatever Transfer-Encoding is given. */
function chunkedRequest(path: string, key: string, transferEncoding: string, body: Buffer, close = false): Buffer {
  const head = [`POST ${path} HTTP/1.1`, 'host: gateway.test', `authorization: Bearer ${key}`, 'content-type: application/json', `transfer-encoding: ${transferEncoding}`, ...(close ? ['connection: close'] : []), '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(`${head}${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
}

/**
 * Sends `requests` one after another on one connection (node's client will not send a coding
 * before chunked) and reads every answer until the gateway closes it.
 */
async function exchange(gw: Gateway, requests: Buffer[]): Promise<RawResponse[]> {
  const port = Number(new URL(gw.url).port);
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  for (const r of requests) socket.write(r);
  await withTimeout(ended, 10_000, 'the gateway closes the connection after the last answer');
  return parseResponses(Buffer.concat(chunks));
}

function parseResponses(raw: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let at = 0;
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at);
    const [statusLine, ...lines] = raw.subarray(at, end).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    at = end + 4;
    let body = '';
    if (headers['content-length'] !== undefined) {
      body = raw.subarray(at, at + Number(headers['content-length'])).toString();
      at += Number(headers['content-length']);
    } else if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const lineEnd = raw.indexOf('\r\n', at);
        const size = parseInt(raw.subarray(at, lineEnd).toString(), 16);
        at = lineEnd + 2;
        body += raw.subarray(at, at + size).toString();
        at += size + 2;
        if (size === 0) break;
      }
    }
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body });
  }
  return out;
}

t.test('a transfer coding other than chunked is refused with 501 before the body is read, on a raw and a JSON route', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], protocols: ['x-responses'] });
  const json = JSON.stringify({ model: 'm', input: 'hi' });
  const gzipped = gzipSync(json);
  const plain = Buffer.from(json);
  const [raw, parsed, spaced, after] = await exchange(gw, [
    // A raw passthrough route: the gzip bytes would otherwise go on as if uncompressed.
    chunkedRequest('/v1/responses/resp_1/anything', keyValue, 'gzip, chunked', gzipped),
    // A JSON route: they would otherwise be refused as invalid JSON.
    chunkedRequest('/v1/responses', keyValue, 'gzip, chunked', gzipped),
    // Codings are case-insensitive and the list may be spaced.
    chunkedRequest('/v1/responses', keyValue, ' Deflate ,Chunked', gzipped),
    // The refusals drained their bodies: the connection still serves plain chunked framing (any case).
    chunkedRequest('/v1/responses/resp_1/anything', keyValue, 'Chunked', plain, true),
  ]);
  for (const [name, res] of [['raw route', raw], ['JSON route', parsed], ['deflate, mixed case', spaced]] as const) {
    t.equal(res?.status, 501, `${name}: RFC 9112 §6.1's status for a transfer coding not understood`);
    t.match(JSON.parse(res?.body ?? '{}'), { error: { code: 'unsupported_transfer_coding' } }, `${name}: the stable code in the protocol's error shape`);
    t.equal(res?.headers['x-should-retry'], 'false', `${name}: the same request would be refused again`);
    const record = await waitForLog(gw, res?.headers['x-switchyard-request-id']);
    t.match(record, { status: 501, error_code: 'unsupported_transfer_coding', attempt_count: 0 }, `${name}: recorded`);
  }
  t.equal(after?.status, 200, 'plain chunked framing is forwarded');
  t.equal(upstream.requests.length, 1, 'only the plain chunked request reached the upstream');
  t.equal(upstream.requests[0]?.body.toString(), json, 'with the body as sent');
});

t.test('the 501 names its status as each SDK family does: UNIMPLEMENTED for generate clients', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'g', upstream: 'vendor-g' }], protocols: ['x-generate'] });
  const [res] = await exchange(gw, [chunkedRequest('/v1beta/models/g:generateContent', keyValue, 'gzip, chunked', gzipSync('{"contents":[]}'), true)]);
  t.equal(res?.status, 501);
  // google.rpc.Code for an unimplemented method (decisions.md §6: the generate shape's status names).
  t.match(JSON.parse(res?.body ?? '{}'), { error: { code: 501, status: 'UNIMPLEMENTED', details: [{ reason: 'unsupported_transfer_coding' }] } });
  t.equal(upstream.requests.length, 0);
});

/** A request whose Transfer-Encoding is `codings` alone, its body sent raw after the head (no framing says where it ends). */
function unframedRequest(path: string, key: string, codings: string, body: Buffer): Buffer {
  const head = [`POST ${path} HTTP/1.1`, 'host: gateway.test', `authorization: Bearer ${key}`, 'content-type: application/json', `transfer-encoding: ${codings}`, '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head), body]);
}

t.test('a Transfer-Encoding that does not end with chunked is answered 400 in the protocol shape and the connection closed, not node bare 400', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, ok);
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'g', upstream: 'vendor-g' }], protocols: ['x-generate', 'x-responses'] });
  // RFC 9112 §6.3: the body's length cannot be told, so 400 and close. node's parser fails the
  // request as soon as its handler returns: the first request (its key not yet cached) was
  // answered by node's own empty 400, a later one 501 promising a keep-alive node then cut.
  for (const [name, path, codings, shape] of [
    ['gzip alone, completions-style route, key not yet cached', '/v1/responses', 'gzip', { error: { code: 'invalid_request_body', type: 'invalid_request_error' } }],
    ['identity, generate route', '/v1beta/models/g:generateContent', 'identity', { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'invalid_request_body' }] } }],
    ['deflate, an unknown path', '/v1/nothing-here', 'deflate', { error: { code: 'invalid_request_body' } }],
  ] as const) {
    const [res, ...more] = await exchange(gw, [unframedRequest(path, keyValue, codings, gzipSync('{"model":"g","input":"hi"}'))]);
    t.equal(res?.status, 400, `${name}: 400`);
    t.match(JSON.parse(res?.body ?? '{}'), shape, `${name}: the stable code in the protocol's error shape`);
    t.equal(res?.headers['connection'], 'close', `${name}: the answer says the connection ends, as it does`);
    t.equal(more.length, 0, `${name}: one answer`);
    t.match(await waitForLog(gw, res?.headers['x-switchyard-request-id']), { status: 400, error_code: 'invalid_request_body', attempt_count: 0 }, `${name}: recorded`);
  }
  t.equal(upstream.requests.length, 0);
});
