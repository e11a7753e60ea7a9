import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { seedRoute, startDataPlane, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { eventually, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gatewayWithUndecryptableCredential } from './helpers/undecryptable-credential.ts';

// What a request that fails for a reason other than the upstream's answer does to the
// credential pool, and what its log record says.

const BOUNDARY = 'switchyard-test-boundary';

/** A multipart image edit sent chunked (no content-length), so that only streaming finds its size. */
function chunkedImageEdit(fileBytes: number): ReadableStream<Uint8Array> {
  const head = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="model"\r\n\r\nimg\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nblue\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="image"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n`;
  const parts = [Buffer.from(head), ...Array.from({ length: Math.ceil(fileBytes / 16384) }, () => Buffer.alloc(16384, 7)), Buffer.from(`\r\n--${BOUNDARY}--\r\n`)];
  return new ReadableStream({
    pull(controller) {
      const next = parts.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

t.test('a streamed body that turns out too large is answered 413 and leaves the credential usable', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    },
    { maxBodyBytes: 64 * 1024 },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'img' }], protocols: ['x-images'], upstreamKeys: ['sk-only-one'] });
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };

  const big = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers, body: chunkedImageEdit(200 * 1024), duplex: 'half' } as RequestInit);
  t.equal(big.status, 413);
  t.match(await big.json(), { error: { code: 'request_too_large' } });
  const record = await waitForLog(gw, big.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 413, error_code: 'request_too_large', attempt_count: 1, attempts: [{ error_code: 'request_too_large' }], channel: 'ch09' });

  // The one credential was not cooled down: the next request goes through it.
  const small = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers, body: chunkedImageEdit(1024), duplex: 'half' } as RequestInit);
  t.equal(small.status, 200);
  t.equal((await waitForLog(gw, small.headers.get('x-switchyard-request-id'))).credential_id !== null, true, 'served through the credential');
});

t.test('no usable credential is answered 503 and logged with the route it would have taken', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"bad key"}}');
  });
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], protocols: ['x-completions'], upstreamKeys: ['sk-revoked'] });
  const send = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: '{"model":"team-m","messages":[]}' });

  t.equal((await send()).status, 401, 'the 401 disables the only credential');
  const res = await send();
  t.equal(res.status, 503);
  t.match(await res.json(), { error: { code: 'no_available_credential' } });
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 503, error_code: 'no_available_credential', attempt_count: 0, credential_id: null, group_id: String(group.id), channel: 'ch02', upstream_model: 'vendor-m', route_mode: 'N' });
  t.equal(upstream.requests.length, 1, 'the second request never reached the upstream');
});

t.test('a client that leaves while its form is being read is logged as client_closed, not as an error of ours', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  const { key, keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'img' }], protocols: ['x-images'] });
  const { hostname, port } = new URL(gw.url);
  const req = request({ hostname, port, path: '/v1/images/edits', method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` } });
  req.on('error', () => {});
  // Once the socket has the head, closing it sends that first, then the end of the connection.
  await new Promise((resolve) => req.write(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nbl`, resolve));
  req.destroy();
  const record = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: key.id }, { limit: 5 })).items[0];
  }, 'the log record');
  t.match(record, { status: 499, error_code: 'client_closed', client_aborted: true });
  t.same(upstream.requests, []);
});

t.test('an upstream that resets the connection during a streamed upload is answered 502, not left hanging', async (t) => {
  const upstream = createServer((req) => req.socket.destroy());
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { port } = upstream.address() as AddressInfo;
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: `http://127.0.0.1:${port}`, models: [{ external: 'img', upstream: 'img' }], protocols: ['x-images'] });
  const headers = { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
  const res = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers, body: chunkedImageEdit(2 * 1024 * 1024), duplex: 'half' } as RequestInit);
  t.equal(res.status, 502);
  t.match(await res.json(), { error: { code: 'upstream_unreachable' } });
  t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 502, error_code: 'upstream_unreachable', client_aborted: false });
});

t.test('an error of none of the data plane\'s kinds (a credential that no longer decrypts) is a 500 internal_error in the client\'s protocol, logged and reported as a warning', async (t) => {
  const upstream = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  let connections = 0;
  upstream.on('connection', () => connections++);
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  const gw = await gatewayWithUndecryptableCredential((store) => seedRoute(store, { channel: 'ch14', baseUrl: `http://127.0.0.1:${port}`, models: [{ external: 'claude', upstream: 'claude-up' }], protocols: ['x-messages'] }));
  t.teardown(async () => {
    await gw.close();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });
  const res = await fetch(`${gw.server.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': gw.seeded.keyValue, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(res.status, 500);
  const body = (await res.json()) as { type: string; error: { type: string; message: string; code: string } };
  t.match(body, { type: 'error', error: { type: 'api_error', code: 'internal_error' } }, 'in the messages error shape');
  t.notMatch(body.error.message, /authenticate|\n\s+at /, 'neither the cause nor a stack reaches the client');
  const warning = await eventually(() => gw.warnings.find((w) => w.message.startsWith('data plane:')), 'the warning');
  t.match(warning.message, /unable to authenticate data/, 'the warning carries the cause');
  t.equal(connections, 0, 'nothing reached the upstream');
  const requestId = res.headers.get('x-switchyard-request-id')!;
  t.match(await eventually(() => gw.server.logs.get(requestId), 'the log record'), { status: 500, error_code: 'internal_error' });
});
