import t from 'tap';
import type net from 'node:net';
import { request } from 'undici';
import { clientAuthHeaders, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { COMPLETIONS, MESSAGES, rig, type Answer } from './helpers/raw-upstream.ts';

// A plain (non-streamed) answer whose body breaks before its first byte reached the client is
// answered with the gateway's 502 upstream_stream_broken in the client protocol's error shape,
// not a cut connection an SDK would retry (billing the prompt again); recorded with that status.
// A body that breaks after some bytes went out is still cut. A 304 (or 204) whose Content-Length
// undici took for a body it never got ended whole; a 204 goes without that length, which undici
// 7 (Node 22's fetch) would take for a body cut short.

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
