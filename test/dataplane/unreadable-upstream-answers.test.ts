import t from 'tap';
import { gzipSync } from 'node:zlib';
import { waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';
import { COMPLETIONS, MESSAGES, rig, type Answer } from './helpers/raw-upstream.ts';

// Answers the gateway's HTTP client cannot read as sent: a transfer coding other than chunked
// (never asked for: the gateway sends no TE), an unasked 100 Continue or 101 (undici refuses any), a
// head that breaks HTTP/1.1 (an obs-fold, two lengths that differ) or one over the client's header limit. Each is a 502 in
// the client protocol's shape, recorded as `upstream_answer_unreadable` on every attempt; a
// chat is safe to send again, so the second credential is tried, once each: no "stale
// connection" renewal on the same credential, which had the request and answered it.

const CHAT = JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });

const ANSWERS: { what: string; answer: Answer }[] = [
  {
    what: 'a gzip transfer coding under chunked',
    answer: (socket) => {
      const body = gzipSync(CHAT);
      socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]));
    },
  },
  { what: 'a gzip transfer coding alone, ended by close', answer: (socket) => socket.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n'), gzipSync(CHAT)])) },
  { what: 'an unasked 100 Continue before the answer', answer: (socket) => socket.write(`HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`) },
  { what: 'a folded header line', answer: (socket) => socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Folded: a\r\n  b\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`) },
  { what: 'a head over 16 KiB', answer: (socket) => socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Big: ${'a'.repeat(20_000)}\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`) },
  // llhttp refuses the second length; undici reports a parser error after a Content-Length as UND_ERR_RES_CONTENT_LENGTH_MISMATCH.
  { what: 'two different Content-Length values', answer: (socket) => socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\nContent-Length: ${CHAT.length + 1}\r\n\r\n${CHAT}`) },
  { what: 'a 101 nothing asked for', answer: (socket) => socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n') },
];

t.test('an answer in the withdrawn identity transfer coding, ended by close, goes to the client as sent', async (t) => {
  const { gw, requests, send } = await rig(t, COMPLETIONS, (socket) => socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: identity\r\n\r\n${CHAT}`));
  const res = await withTimeout(send(), 5000, 'the answer');
  t.equal(res.status, 200);
  t.equal(await res.text(), CHAT);
  const log = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.match(log, { status: 200, error_code: null, usage: { input_tokens: 1, output_tokens: 1 } });
  t.equal(requests(), 1);
});

for (const { style, stream } of [
  { style: COMPLETIONS, stream: false },
  { style: COMPLETIONS, stream: true },
  { style: MESSAGES, stream: false },
]) {
  for (const { what, answer } of ANSWERS) {
    t.test(`${style.name}${stream ? ' (stream)' : ''}: ${what} is a 502 recorded as upstream_answer_unreadable`, async (t) => {
      const { gw, requests, send } = await rig(t, style, answer);
      const res = await withTimeout(send(stream ? { stream: true } : {}), 5000, 'the answer');
      t.equal(res.status, 502);
      t.match(res.headers.get('content-type'), /^application\/json/);
      const body = await res.json();
      t.equal(style.codeOf(t, body), 'upstream_unreachable', "the reason code in the protocol's error shape");
      t.match(JSON.stringify(body), /upstream_answer_unreadable/, 'the message names what happened');
      const log = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.equal(log.status, 502);
      t.equal(log.error_code, 'upstream_unreachable');
      t.same(
        log.attempts.map((a) => [a.status, a.error_code]),
        [
          [null, 'upstream_answer_unreadable'],
          [null, 'upstream_answer_unreadable'],
        ],
        'one attempt per credential',
      );
      t.equal(requests(), 2, 'the upstream got the request once per credential');
    });
  }
}
