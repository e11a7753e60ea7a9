import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { seedRoute, startUpstream } from '../dataplane/helpers/data-plane-harness.ts';
import { deferred, withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';

// The gateway behind nginx as nginx proxies by default: HTTP/1.0 with `Connection: close`, its
// forwarding headers added, and the answer buffered unless it says `X-Accel-Buffering: no`.

const AUTH_KEY = 'behind-proxy-auth-key-0123456789abcdef01';
const CHUNK = (content: string) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'v-a', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
const USAGE = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'v-a', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`;
const ANSWER = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'v-a', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });

async function setup(t: Test) {
  // The second event waits for the client to have the first: one buffered on the way never comes.
  const firstEventSeen = deferred();
  const upstream = await startUpstream(async (req, res) => {
    if (req.url === '/v1/audio/speech') {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.end(Buffer.alloc(64, 1));
      return;
    }
    if (JSON.parse(req.body.toString()).stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(ANSWER)) });
      res.end(ANSWER);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(CHUNK('one'));
    await firstEventSeen.promise;
    res.write(CHUNK('two'));
    res.write(USAGE);
    res.end('data: [DONE]\n\n');
  });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-behind-proxy-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  t.teardown(async () => {
    // A stream still waiting for its first event to be seen (this test failing) is let go.
    firstEventSeen.resolve();
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { keyValue } = await seedRoute(server.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm-a', upstream: 'v-a' }], protocols: ['x-completions'] });
  return { server, upstream, keyValue, firstEventSeen };
}

/** A request as nginx sends it by default (proxy_http_version 1.0), with the headers a proxy adds. */
function asNginxSends(pathname: string, key: string, body: string): string {
  return (
    `POST ${pathname} HTTP/1.0\r\nHost: gateway.example\r\nConnection: close\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nTE: trailers\r\nVia: 1.1 edge\r\n` +
    `X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: api.example\r\nX-Real-IP: 203.0.113.9\r\n` +
    `Forwarded: for=203.0.113.9;proto=https\r\n\r\n${body}`
  );
}

/** Sends `request` and reads to the connection's close, calling `onData` with all read so far; the socket goes when `t` ends. */
function exchange(t: Test, port: number, request: string, onData: (soFar: string) => void = () => {}): Promise<{ head: Record<string, string>; statusLine: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    t.teardown(() => socket.destroy());
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      onData(text);
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const end = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
      const head: Record<string, string> = {};
      for (const line of lines) head[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      resolve({ head, statusLine, body: text.slice(end + 4) });
    });
    socket.write(request);
  });
}

t.test('an HTTP/1.0 stream request gets its events as they come, unchunked, and the connection closes at its end', async (t) => {
  const s = await setup(t);
  const body = JSON.stringify({ model: 'm-a', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const answer = await withTimeout(
    exchange(t, s.server.port, asNginxSends('/v1/chat/completions', s.keyValue, body), (soFar) => soFar.includes('"one"') && s.firstEventSeen.resolve()),
    10_000,
    'the stream to end',
  );
  t.match(answer.statusLine, / 200 /);
  t.equal(answer.head['transfer-encoding'], undefined, 'no chunked coding to an HTTP/1.0 client');
  t.equal(answer.head['content-length'], undefined);
  t.equal(answer.head['connection'], 'close', 'the close ends the body');
  t.equal(answer.head['x-accel-buffering'], 'no', 'nginx is told to pass the events on unbuffered');
  t.equal(answer.body, CHUNK('one') + CHUNK('two') + 'data: [DONE]\n\n', 'every event, the usage chunk the gateway asked for dropped');
  await s.server.logs.flush();
  const [record] = (await s.server.logs.list({}, { limit: 10 })).items;
  t.match(record, { status: 200, error_code: null, client_aborted: false, usage: { input_tokens: 5, output_tokens: 2 } }, 'the record is whole');
  const sent = s.upstream.requests[0]!.headers;
  for (const name of ['te', 'via', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded']) t.equal(sent[name], undefined, `${name} is not forwarded upstream`);
});

t.test('an HTTP/1.0 plain request gets the upstream length and no X-Accel-Buffering', async (t) => {
  const s = await setup(t);
  const body = JSON.stringify({ model: 'm-a', messages: [{ role: 'user', content: 'hi' }] });
  const answer = await withTimeout(exchange(t, s.server.port, asNginxSends('/v1/chat/completions', s.keyValue, body)), 10_000, 'the answer');
  t.match(answer.statusLine, / 200 /);
  t.equal(answer.head['content-length'], String(Buffer.byteLength(ANSWER)));
  t.equal(answer.body, ANSWER);
  t.equal(answer.head['x-accel-buffering'], undefined, 'a whole JSON answer may be buffered');
});

t.test('a speech answer, audio a player starts on as it comes, is not buffered by nginx either', async (t) => {
  const s = await setup(t);
  const speech = await seedRoute(s.server.store, { channel: 'ch03', baseUrl: s.upstream.url, models: [{ external: 'tts', upstream: 'up-tts' }], protocols: ['x-suite'] });
  const body = JSON.stringify({ model: 'tts', input: 'hi', voice: 'alloy' });
  const answer = await withTimeout(exchange(t, s.server.port, asNginxSends('/v1/audio/speech', speech.keyValue, body)), 10_000, 'the answer');
  t.match(answer.statusLine, / 200 /);
  t.equal(answer.head['content-type'], 'audio/mpeg');
  t.equal(answer.head['x-accel-buffering'], 'no');
});
