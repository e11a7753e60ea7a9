import t, { type Test } from 'tap';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { startDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// A plain (non-streamed) answer whose body breaks before its first byte reached the client is
// answered with the gateway's 502 upstream_stream_broken in the client protocol's error shape,
// not a cut connection an SDK would retry (billing the prompt again); recorded with that status.
// A body that breaks after some bytes went out is still cut. A 304 (or 204) whose Content-Length
// undici took for a body it never got ended whole; a 204 goes without that length, which undici
// 7 (Node 22's fetch) would take for a body cut short.

/** Writes `answer` to the socket of each request the raw upstream reads (whole head and body). */
type Answer = (socket: net.Socket) => void;

async function rawUpstream(t: Test, answer: Answer): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length:\s*(\d+)/i.exec(buffered.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = buffered.subarray(end + 4 + length);
      requests++;
      answer(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

interface Style {
  name: string;
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  codeOf: (t: Test, body: unknown) => unknown;
}

const COMPLETIONS: Style = {
  name: 'completions',
  protocol: 'x-completions',
  channel: 'ch02',
  path: '/v1/chat/completions',
  body: { model: 'team-m', messages: [{ role: 'user', content: 'hi' }] },
  codeOf: (t, body) => {
    t.match(body, { error: { message: String, type: String, param: null } }, 'the openai error shape');
    return (body as { error: { code: unknown } }).error.code;
  },
};

const MESSAGES: Style = {
  name: 'messages',
  protocol: 'x-messages',
  channel: 'ch14',
  path: '/v1/messages',
  body: { model: 'team-m', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  codeOf: (t, body) => {
    t.match(body, { type: 'error', error: { type: String, message: String } }, 'the messages error shape');
    return (body as { error: { details: { error_code: unknown } } }).error.details.error_code;
  },
};

/** The style's route with two credentials (a failover would show as a second upstream request). */
async function rig(t: Test, style: Style, answer: Answer): Promise<{ gw: Gateway; keyValue: string; requests: () => number; send: () => Promise<Response> }> {
  const upstream = await rawUpstream(t, answer);
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-first-000001', 'sk-second-00002'] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const send = () => fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...clientAuthHeaders(style.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify(style.body) });
  return { gw, keyValue, requests: upstream.requests, send };
}

const BREAKS_BEFORE_BODY: { what: string; answer: Answer }[] = [
  {
    what: 'a 200 with its Content-Length and then a reset, no body',
    answer: (socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Upstream-Header: kept-back\r\nContent-Length: 500\r\n\r\n');
      setImmediate(() => socket.resetAndDestroy());
    },
  },
  {
    what: 'a chunked 200 whose first chunk size is no number',
    answer: (socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Upstream-Header: kept-back\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n{}\r\n0\r\n\r\n'),
  },
];

for (const style of [COMPLETIONS, MESSAGES]) {
  for (const { what, answer } of BREAKS_BEFORE_BODY) {
    t.test(`${style.name}: ${what} is answered 502 upstream_stream_broken`, async (t) => {
      const { gw, requests, send } = await rig(t, style, answer);
      const res = await withTimeout(send(), 5000, 'the answer');
      t.equal(res.status, 502, "the gateway's status, not the upstream's 200");
      t.match(res.headers.get('content-type'), /^application\/json/);
      t.equal(res.headers.get('x-should-retry'), 'false', 'an SDK is not to send the prompt again');
      t.equal(res.headers.get('x-upstream-header'), null, "none of the upstream's headers");
      const requestId = res.headers.get('x-switchyard-request-id');
      t.ok(requestId, 'with the request id');
      t.equal(style.codeOf(t, await res.json()), 'upstream_stream_broken', "the reason code in the protocol's error shape");
      const log = await waitForLog(gw, requestId);
      t.equal(log.status, 502, 'recorded with the status the client got');
      t.equal(log.error_code, 'upstream_stream_broken');
      t.match(log.attempts, [{ status: 200, error_code: 'upstream_stream_broken' }]);
      t.equal(requests(), 1, 'no failover: the upstream accepted the request');
    });
  }
}

t.test('a body that breaks after its first bytes reached the client is cut', async (t) => {
  let upstreamSocket: net.Socket | undefined;
  const { gw, send } = await rig(t, COMPLETIONS, (socket) => {
    upstreamSocket = socket;
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"id":"c1","choices":[');
  });
  const res = await withTimeout(send(), 5000, 'the answer');
  t.equal(res.status, 200, "the upstream's status went out with the first bytes");
  const requestId = res.headers.get('x-switchyard-request-id');
  upstreamSocket!.resetAndDestroy();
  await t.rejects(withTimeout(res.arrayBuffer(), 5000, 'the body'), 'the client connection is cut');
  const log = await waitForLog(gw, requestId);
  t.equal(log.status, 200, 'recorded with the status the client got');
  t.equal(log.error_code, 'upstream_stream_broken');
});

for (const status of ['304 Not Modified', '204 No Content']) {
  t.test(`a ${status} with a Content-Length and no body goes to the client whole`, async (t) => {
    const { gw, keyValue } = await rig(t, COMPLETIONS, (socket) => socket.write(`HTTP/1.1 ${status}\r\nETag: "v1"\r\nContent-Length: 123\r\n\r\n`));
    // undici 7's client, as Node 22's fetch: it fails a 204 whose Content-Length is not 0.
    const res = await withTimeout(
      request(`${gw.url}${COMPLETIONS.path}`, { method: 'POST', headers: { ...clientAuthHeaders(COMPLETIONS.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify(COMPLETIONS.body) }),
      5000,
      'the answer',
    );
    t.equal(res.statusCode, Number(status.slice(0, 3)));
    t.equal(res.headers['etag'], '"v1"');
    t.equal((await withTimeout(res.body.arrayBuffer(), 5000, 'the body')).byteLength, 0, 'no body');
    const log = await waitForLog(gw, String(res.headers['x-switchyard-request-id']));
    t.equal(log.status, Number(status.slice(0, 3)));
    t.equal(log.error_code, null, 'a clean end');
  });
}
