import t, { type Test } from 'tap';
import net, { type AddressInfo } from 'node:net';
import { startDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, createKey, credentialView, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { resolveUpstreamOptions } from '../../src/upstream/upstream-options.ts';
import { STALE_CONNECTION_WINDOW_MS } from '../../src/upstream/classify-upstream-error.ts';

// A pooled keep-alive connection the upstream closes as the next request crosses its idle
// timeout says nothing of the credential: the request goes again on a new connection when it
// may be replayed, and no credential cools down.

/** What the upstream does with the nth request (from 1) on a connection. */
type OnRequest = (socket: net.Socket, nth: number) => void;

/** A raw HTTP/1.1 upstream on 127.0.0.1 (bodies by content-length), counting connections and requests. */
async function rawUpstream(t: Test, onRequest: OnRequest): Promise<{ url: string; connections(): number; requests(): number }> {
  let connections = 0;
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let nth = 0;
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const length = Number(/content-length:\s*(\d+)/i.exec(buffered.subarray(0, headEnd).toString('latin1'))?.[1] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        buffered = buffered.subarray(headEnd + 4 + length);
        requests++;
        onRequest(socket, ++nth);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, requests: () => requests };
}

function answer(socket: net.Socket, body: string): void {
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/** Answers the first request on each connection; closes the connection, unanswered, at the second. */
const closesAtSecond =
  (body: string): OnRequest =>
  (socket, nth) =>
    nth === 1 ? answer(socket, body) : socket.destroy();

const MODELS = [{ external: 'team-chat', upstream: 'vendor-chat' }];

async function setup(t: Test, channel: string, protocol: string, onRequest: OnRequest, secrets = ['sk-only-one-123456']) {
  const upstream = await rawUpstream(t, onRequest);
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { group, credentials } = await seedGroup(gw.store, { channel, baseUrl: upstream.url, models: MODELS, secrets });
  const { keyValue } = await createKey(gw.store, { protocols: [protocol] });
  return { upstream, gw, group, credentials, credential: credentials[0]!, keyValue };
}

const chat = (gw: Gateway, keyValue: string) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
const embeddings = (gw: Gateway, keyValue: string) =>
  fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'team-chat', input: 'x' }) });

t.test('a replay-safe request on a pooled connection the upstream closed goes again on a new one: 200, no cooldown', async (t) => {
  const { upstream, gw, group, credential, keyValue } = await setup(t, 'ch02', 'x-completions', closesAtSecond(completionJson('vendor-chat')));
  const first = await chat(gw, keyValue);
  t.equal(first.status, 200);
  await first.text();
  const second = await chat(gw, keyValue);
  t.equal(second.status, 200, 'the second request is answered');
  await second.text();
  t.equal(upstream.connections(), 2, 'the request went again on a new connection');
  t.equal(upstream.requests(), 3);
  const view = await credentialView(gw.store, group.id, credential.id);
  t.equal(view.cooldown_until, null, 'the credential is not cooled down');
  t.equal(view.state, 'active');
  const record = await waitForLog(gw, second.headers.get('x-switchyard-request-id'));
  t.match(record, {
    status: 200,
    attempt_count: 2,
    attempts: [
      { credential_id: String(credential.id), status: null, error_code: 'upstream_stale_connection' },
      { credential_id: String(credential.id), status: 200, error_code: null },
    ],
  });
  const third = await chat(gw, keyValue);
  t.equal(third.status, 200, 'the next request too');
});

t.test('a request not replay-safe on a pooled connection the upstream closed is not sent again, and no credential cools down', async (t) => {
  const embedding = JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1] }], model: 'vendor-chat', usage: { prompt_tokens: 1, total_tokens: 1 } });
  const { upstream, gw, group, credential, keyValue } = await setup(t, 'ch03', 'x-chat-embeddings', closesAtSecond(embedding));
  const first = await embeddings(gw, keyValue);
  t.equal(first.status, 200);
  await first.text();
  const second = await embeddings(gw, keyValue);
  t.equal(second.status, 502);
  t.match(await second.json(), { error: { code: 'upstream_unreachable' } });
  t.equal(upstream.requests(), 2, 'not sent again');
  const view = await credentialView(gw.store, group.id, credential.id);
  t.equal(view.cooldown_until, null, 'the credential is not cooled down');
  const record = await waitForLog(gw, second.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'upstream_unreachable', attempt_count: 1, attempts: [{ status: null, error_code: 'upstream_stale_connection' }] });
  const third = await embeddings(gw, keyValue);
  t.equal(third.status, 200, 'the credential still serves');
});

t.test('a warm connection lost well after the request was written (the upstream at work on it) is judged as any lost connection: cooldown, the next credential', async (t) => {
  const { upstream, gw, group, credentials, keyValue } = await setup(
    t,
    'ch02',
    'x-completions',
    (socket, nth) => {
      if (nth === 1) return answer(socket, completionJson('vendor-chat'));
      // The upstream crashes (or a load balancer cuts it) while it works on the request.
      setTimeout(() => socket.destroy(), STALE_CONNECTION_WINDOW_MS + 500);
    },
    ['sk-first-key-123456', 'sk-second-key-123456'],
  );
  const first = await chat(gw, keyValue);
  t.equal(first.status, 200);
  await first.text();
  const second = await chat(gw, keyValue);
  t.equal(second.status, 200, 'answered by the next credential');
  await second.text();
  t.equal(upstream.requests(), 3, 'not sent again to the same credential');
  const record = await waitForLog(gw, second.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 200, attempt_count: 2, attempts: [{ status: null, error_code: 'upstream_connection_lost' }, { status: 200, error_code: null }] });
  const [lost, served] = record.attempts as Array<{ credential_id: string }>;
  t.not(lost!.credential_id, served!.credential_id, 'failed over to the other credential');
  const cooled = credentials.find((c) => String(c.id) === lost!.credential_id)!;
  t.not((await credentialView(gw.store, group.id, cooled.id)).cooldown_until, null, 'the credential it was lost on cools down');
});

t.test('control: an upstream that closes every request after the first, on new connections too, still cools the credential down', async (t) => {
  let answered = false;
  const { upstream, gw, group, credential, keyValue } = await setup(t, 'ch02', 'x-completions', (socket) => {
    if (answered) return void socket.destroy();
    answered = true;
    answer(socket, completionJson('vendor-chat'));
  });
  t.equal((await chat(gw, keyValue)).status, 200);
  const second = await chat(gw, keyValue);
  t.equal(second.status, 502);
  t.equal(upstream.requests(), 3, 'sent again once, on a new connection');
  const view = await credentialView(gw.store, group.id, credential.id);
  t.not(view.cooldown_until, null, 'the credential is cooled down');
  const record = await waitForLog(gw, second.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, error_code: 'upstream_unreachable', attempts: [{ error_code: 'upstream_stale_connection' }, { error_code: 'upstream_connection_lost' }] });
});

t.test('an answer cut after its first bytes on a fresh connection is a lost connection, not a stale one: the upstream took the request', async (t) => {
  const { upstream, gw, group, credential, keyValue } = await setup(t, 'ch02', 'x-completions', (socket) => {
    socket.end('HTTP/1.1 2');
  });
  const res = await chat(gw, keyValue);
  t.equal(res.status, 502);
  t.equal(upstream.requests(), 1, 'not sent again to the same credential');
  const view = await credentialView(gw.store, group.id, credential.id);
  t.not(view.cooldown_until, null, 'the credential is cooled down');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { attempt_count: 1, attempts: [{ error_code: 'upstream_connection_lost' }] });
});

t.test('a warm connection whose next answer breaks off after its first bytes is a lost connection too: the next credential, not the same one again', async (t) => {
  const { upstream, gw, keyValue } = await setup(t, 'ch02', 'x-completions', (socket, nth) => (nth === 1 ? answer(socket, completionJson('vendor-chat')) : socket.end('HTTP/1.1 2')), ['sk-first-key-123456', 'sk-second-key-123456']);
  const first = await chat(gw, keyValue);
  t.equal(first.status, 200, 'the first answer warms the connection');
  await first.text();
  const res = await chat(gw, keyValue);
  t.equal(res.status, 200, 'answered by the next credential');
  await res.text();
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { attempt_count: 2, attempts: [{ status: null, error_code: 'upstream_connection_lost' }, { status: 200 }] });
  t.equal(upstream.requests(), 3, 'the cut request was sent once to its credential');
});

t.test('a request not replay-safe whose answer breaks off mid-head (a reset) ends with the lost connection: not for the SDKs to send again, the credential cooled down', async (t) => {
  const { upstream, gw, group, credentials, keyValue } = await setup(
    t,
    'ch03',
    'x-chat-embeddings',
    (socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: appl');
      setTimeout(() => socket.resetAndDestroy(), 20);
    },
    ['sk-first-key-123456', 'sk-second-key-123456'],
  );
  const res = await embeddings(gw, keyValue);
  t.equal(res.status, 502);
  t.equal(res.headers.get('x-should-retry'), 'false', 'the upstream may have run it: the SDKs are not to send it again');
  t.match(await res.json(), { error: { code: 'upstream_unreachable' } });
  t.equal(upstream.requests(), 1, 'sent once: to no other credential, nor again to the same');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { status: 502, attempt_count: 1, attempts: [{ status: null, error_code: 'upstream_connection_lost' }] });
  const tried = credentials.find((c) => String(c.id) === (record.attempts as Array<{ credential_id: string }>)[0]!.credential_id)!;
  t.not((await credentialView(gw.store, group.id, tried.id)).cooldown_until, null, 'the credential it was lost on cools down');
});

t.test('idle upstream connections are kept 4 s by default, under the 5 s of uvicorn servers', async (t) => {
  t.equal(resolveUpstreamOptions({}).keepAliveTimeoutMs, 4_000);
});

t.test("a resend after a stale connection asked no other credential: the upstream's own retry hint on its error stays as sent", async (t) => {
  // The first connection answers once, then closes at the next request; every later connection answers 429.
  let connection = 0;
  const opened = new WeakMap<net.Socket, number>();
  const onRequest: OnRequest = (socket, nth) => {
    if (!opened.has(socket)) opened.set(socket, ++connection);
    if (opened.get(socket) !== 1) return void socket.write('HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\n{}');
    if (nth === 1) answer(socket, completionJson('vendor-chat'));
    else socket.destroy();
  };
  const { gw, keyValue } = await setup(t, 'ch02', 'x-completions', onRequest, ['sk-first-one-123456', 'sk-second-one-12345']);
  // One attempt per request: the 429 is the last answer, with the other credential still usable.
  await gw.store.settings.save({ max_attempts_per_request: 1 });
  t.equal((await chat(gw, keyValue)).status, 200);
  const res = await chat(gw, keyValue);
  t.equal(res.status, 429);
  t.equal(res.headers.get('retry-after'), '7', "the one credential asked: its hint as sent, not removed as after several credentials");
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(record, { attempts: [{ error_code: 'upstream_stale_connection' }, { status: 429 }] });
});
