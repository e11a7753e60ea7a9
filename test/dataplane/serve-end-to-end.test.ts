import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer, type ServerOptions } from '../../src/server/create-server.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { deferred, eventually, withTimeout } from './helpers/dataplane-scenarios.ts';

const AUTH_KEY = 'end-to-end-auth-key-0123456789abcdef';

/** The composition `switchyard serve` runs: management plane, data plane, SQLite logs, one port. */
async function serve(t: Test, options: Pick<ServerOptions, 'shutdownGraceMs'> = {}) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-e2e-'));
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {}, ...options });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const api = async (method: string, p: string, token = AUTH_KEY, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() });
    const res = await fetch(`${server.url}${p}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: (await res.json()) as { code: number | string; data: Record<string, any> } };
  };
  /** One ch02 Group (`chat` to `vendor-chat`) in front of `upstreamUrl` with one imported key, over the management API. */
  const chatGroup = async (upstreamUrl: string, secret: string) => {
    const group = (await api('POST', '/api/groups', AUTH_KEY, { name: 'g', channel: 'ch02', base_url: upstreamUrl, models: [{ external: 'chat', upstream: 'vendor-chat' }] })).json.data;
    await api('POST', `/api/groups/${group.id}/credentials/import`, AUTH_KEY, { credentials: secret });
    return group;
  };
  const accessKey = async (fields: Record<string, unknown> = {}) => (await api('POST', '/api/access-keys', AUTH_KEY, { name: 'k', protocols: ['x-completions'], ...fields })).json.data;
  return { server, api, dataDir, chatGroup, accessKey };
}

t.test('a recorded request body written by the data plane is readable by the AUTH_KEY and the key that sent it only', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1}}');
  });
  t.teardown(() => upstream.close());
  const { server, api, chatGroup, accessKey } = await serve(t);
  await chatGroup(upstream.url, 'sk-upstream-e2e-0001');
  const sender = await accessKey({ name: 'sender', record_request_body: true });
  const other = await accessKey({ name: 'other' });

  const original = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'my secret prompt' }] });
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${sender.value}`, 'content-type': 'application/json' }, body: original });
  t.equal(res.status, 200);
  const id = res.headers.get('x-switchyard-request-id')!;
  await server.logs.flush();

  const own = await api('GET', `/api/logs/${id}`, sender.value);
  t.equal(own.status, 200);
  t.match(own.json.data, { access_key_id: sender.id, upstream_model: 'vendor-chat', usage: { input_tokens: 4, output_tokens: 1 } });
  t.equal(own.json.data.request_body.body, original, 'the original body, as sent');
  t.same((await api('GET', `/api/logs/${id}`)).json.data.request_body, own.json.data.request_body, 'the AUTH_KEY reads it too');
  t.equal((await api('GET', `/api/logs/${id}`, other.value)).status, 404, 'another key does not see the request at all');
  t.notMatch(JSON.stringify(own.json.data), 'sk-upstream-e2e-0001', 'the upstream credential is in no log');
});

t.test('a recorded JSON body is its text byte for byte: big numbers, duplicate keys and escapes as sent', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c","choices":[]}');
  });
  t.teardown(() => upstream.close());
  const { server, api, chatGroup, accessKey } = await serve(t);
  await chatGroup(upstream.url, 'sk-upstream-e2e-0003');
  const sender = await accessKey({ record_request_body: true });
  const sent = '{"model":"chat","seed":12345678901234567890,"x":1,"x":2,"s":"caf\\u00e9","n":1.0}';
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${sender.value}`, 'content-type': 'application/json' }, body: sent });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  await server.logs.flush();
  const detail = await api('GET', `/api/logs/${res.headers.get('x-switchyard-request-id')}`);
  t.same(detail.json.data.request_body, { state: 'recorded', original_bytes: Buffer.byteLength(sent), body: sent }, 'the text as sent, with no encoding');
});

/** A multipart form as exact bytes: fields are [name, value] or [name, filename, content type, bytes]. */
function multipartForm(boundary: string, parts: ([string, string] | [string, string, string, Buffer])[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const [name] = part;
    if (part.length === 2) chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${part[1]}\r\n`));
    else chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${part[1]}"\r\nContent-Type: ${part[2]}\r\n\r\n`), part[3], Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

t.test('a recorded form is its UTF-8 text when it is text, and base64 of the bytes sent when a part is binary', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"created":1,"data":[]}');
  });
  t.teardown(() => upstream.close());
  const { server, api, accessKey } = await serve(t);
  const group = (await api('POST', '/api/groups', AUTH_KEY, { name: 'img', channel: 'ch09', base_url: upstream.url, models: [{ external: 'img', upstream: 'vendor-img' }] })).json.data;
  await api('POST', `/api/groups/${group.id}/credentials/import`, AUTH_KEY, { credentials: 'sk-upstream-e2e-0004' });
  const sender = await accessKey({ protocols: ['x-images'], record_request_body: true });
  const boundary = 'switchyard-e2e-boundary';
  const recordOf = async (form: Buffer) => {
    const res = await fetch(`${server.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${sender.value}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form });
    t.equal(res.status, 200);
    await res.arrayBuffer();
    await server.logs.flush();
    return (await api('GET', `/api/logs/${res.headers.get('x-switchyard-request-id')}`)).json.data.request_body;
  };
  const MiB = 1024 * 1024;
  // Every byte value: not UTF-8 text.
  const png = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));

  const textForm = multipartForm(boundary, [['model', 'img'], ['prompt', 'café ☕']]);
  t.same(await recordOf(textForm), { state: 'recorded', original_bytes: textForm.length, body: textForm.toString('utf8') }, 'a text-only form: its UTF-8 text, no encoding');

  const withFile = multipartForm(boundary, [['model', 'img'], ['prompt', 'café ☕'], ['image', 'in.png', 'image/png', png]]);
  const binary = await recordOf(withFile);
  t.match(binary, { state: 'recorded', original_bytes: withFile.length, encoding: 'base64' });
  t.ok(Buffer.from(binary.body, 'base64').equals(withFile), 'base64 of exactly the bytes sent');

  const large = multipartForm(boundary, [['model', 'img'], ['prompt', 'café ☕'], ['image', 'in.png', 'image/png', Buffer.concat(Array.from({ length: 400 }, () => png))]]);
  const cut = await recordOf(large);
  t.match(cut, { state: 'truncated', original_bytes: large.length, encoding: 'base64' });
  t.ok(Buffer.from(cut.body, 'base64').equals(large.subarray(0, MiB)), 'base64 of the first MiB sent');

  // A text file whose first MiB ends inside a two-byte "é": the kept text stops before it.
  const head = multipartForm(boundary, [['model', 'img'], ['image', 'notes.txt', 'text/plain', Buffer.alloc(0)]]).indexOf('\r\n\r\n', 100) + 4;
  const notes = Buffer.from('a'.repeat(MiB - 1 - head) + 'é'.repeat(1000));
  const longText = multipartForm(boundary, [['model', 'img'], ['image', 'notes.txt', 'text/plain', notes]]);
  t.equal(longText[MiB - 1], 0xc3, 'the first MiB ends with the first byte of "é"');
  t.same(await recordOf(longText), { state: 'truncated', original_bytes: longText.length, body: longText.subarray(0, MiB - 1).toString('utf8') }, 'a text cut mid-character: its complete characters, as text');
});

t.test('a cooldown the data plane sets after an upstream 429 shows in route inspection', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '120' });
    res.end('{"error":{"message":"slow down","type":"rate_limit_error"}}');
  });
  t.teardown(() => upstream.close());
  const { server, api, chatGroup, accessKey } = await serve(t);
  await chatGroup(upstream.url, 'sk-upstream-e2e-0002');
  const key = await accessKey();

  const before = (await api('POST', '/api/route/inspect', AUTH_KEY, { protocol: 'x-completions', external_model: 'chat', access_key_id: key.id })).json.data;
  t.match(before, { routable: true, candidates: [{ included: true, credentials: [{ available: true }] }] });

  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}` }, body: JSON.stringify({ model: 'chat', messages: [] }) });
  t.equal(res.status, 429, 'the upstream answer comes back as sent');
  t.equal(res.headers.get('retry-after'), '120');

  const after = (await api('POST', '/api/route/inspect', AUTH_KEY, { protocol: 'x-completions', external_model: 'chat', access_key_id: key.id })).json.data;
  t.match(after, { routable: false, reason_code: 'no_available_credential', candidates: [{ included: false, credentials: [{ available: false, state: 'cooldown', reason_code: 'credential_cooldown' }] }] });
  const until = Date.parse(after.candidates[0].credentials[0].cooldown_until);
  t.ok(until > Date.now() + 60_000, 'the cooldown honours Retry-After');
  const refused = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}` }, body: JSON.stringify({ model: 'chat', messages: [] }) });
  t.equal(refused.status, 503, 'the data plane agrees: nothing is sent while the only credential cools down');
  t.equal(upstream.requests.length, 1);
});

interface KeptAliveAnswer {
  status: number;
  connection: string | undefined;
  body: string;
}

/** A chat request on the agent's one keep-alive connection; `onHead` sees the answer's head before its body ends. */
function chatOn(agent: Agent, url: string, keyValue: string, stream: boolean, onHead: () => void = () => {}): Promise<KeptAliveAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/chat/completions`, { method: 'POST', agent, headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' } }, (res) => {
      onHead();
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'chat', stream, messages: [] }));
  });
}

/** What a request sent after shutdown began may get: no connection, or an answer that closes its connection. */
async function afterShutdown(answer: Promise<KeptAliveAnswer>): Promise<string> {
  try {
    const { status, connection } = await answer;
    return `answered ${status} with connection: ${connection}`;
  } catch {
    return 'refused';
  }
}

t.test('shutdown ends a keep-alive connection with the request in flight on it instead of serving more on it', async (t) => {
  const release = deferred();
  const upstream = await startUpstream(async (_req, res) => {
    await release.promise;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1}}');
  });
  t.teardown(() => upstream.close());
  const { server, chatGroup, accessKey } = await serve(t);
  await chatGroup(upstream.url, 'sk-upstream-e2e-0003');
  const key = await accessKey();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());

  const inFlight = chatOn(agent, server.url, key.value, false);
  await eventually(() => (upstream.requests.length === 1 ? true : undefined), 'the request at the upstream');
  const closing = server.close();
  release.resolve();
  const answer = await inFlight;
  t.equal(answer.status, 200, 'the request in flight is answered');
  t.equal(answer.connection, 'close', 'and told that its connection ends');
  t.equal(await afterShutdown(chatOn(agent, server.url, key.value, false)), 'refused', 'the next request finds no connection to be served on');
  await closing;
  t.equal(upstream.requests.length, 1);
});

t.test('shutdown closes a keep-alive connection once the stream in flight on it ends', async (t) => {
  const release = deferred();
  const upstream = await startUpstream(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
    await release.promise;
    res.end('data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1}}\n\ndata: [DONE]\n\n');
  });
  t.teardown(() => upstream.close());
  const { server, chatGroup, accessKey } = await serve(t);
  await chatGroup(upstream.url, 'sk-upstream-e2e-0004');
  const key = await accessKey();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());

  const headSeen = deferred();
  const stream = chatOn(agent, server.url, key.value, true, () => headSeen.resolve());
  await headSeen.promise;
  const closing = server.close();
  release.resolve();
  const answer = await stream;
  t.equal(answer.connection, 'keep-alive', 'its head went out before the shutdown');
  t.match(answer.body, /\[DONE\]/, 'the stream is delivered to its end');
  const next = await afterShutdown(chatOn(agent, server.url, key.value, false));
  t.ok(next === 'refused' || next === 'answered 200 with connection: close', `a request sent after the stream ended is not served on a kept connection (${next})`);
  await closing;
});

t.test('when the shutdown grace ends, a stream ends with its error event, a waiting request is answered 503 and an upload is cut; the records say the gateway ended them', async (t) => {
  const upstream = await startUpstream((req, res) => {
    // A stream that has begun, or no answer at all.
    if (!JSON.parse(req.body.toString()).stream) return;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
  });
  t.teardown(() => upstream.close());
  const { server, dataDir, chatGroup, accessKey } = await serve(t, { shutdownGraceMs: 200 });
  await chatGroup(upstream.url, 'sk-upstream-e2e-0005');
  const key = await accessKey();
  const agents = [new Agent({ keepAlive: true }), new Agent({ keepAlive: true }), new Agent({ keepAlive: true })];
  t.teardown(() => agents.forEach((a) => a.destroy()));

  const headSeen = deferred();
  const stream = chatOn(agents[0]!, server.url, key.value, true, () => headSeen.resolve());
  const waiting = chatOn(agents[1]!, server.url, key.value, false);
  // A client still sending its body: half of it, then nothing.
  const uploading = new Promise<string>((resolve) => {
    const req = request(`${server.url}/v1/chat/completions`, { method: 'POST', agent: agents[2]!, headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json', 'content-length': '100' } }, (res) => resolve(`answered ${res.statusCode}`));
    req.on('error', () => resolve('cut'));
    req.write('{"model":"chat",');
  });
  await headSeen.promise;
  await eventually(() => (upstream.requests.length === 2 ? true : undefined), 'both complete requests at the upstream');
  await server.close();
  const streamed = await stream;
  t.match(streamed.body, /"hi"/, 'the stream kept what the upstream sent');
  const events = streamed.body.split('\n\n').filter((e) => e !== '');
  t.match(JSON.parse(events.at(-1)!.replace(/^data: /, '')), { error: { code: 'shutting_down' } }, "and ends with the protocol's error event");
  const answered = await waiting;
  t.equal(answered.status, 503, 'the request still waiting for the upstream is answered 503');
  t.match(JSON.parse(answered.body), { error: { code: 'shutting_down', type: String, message: String } }, 'in its protocol\'s error shape');
  t.equal(answered.connection, 'close', 'on a connection that ends');
  t.equal(await uploading, 'cut', 'a client that had not finished its body loses its connection');

  const logs = openSqliteLogStore(dataDir);
  t.teardown(() => logs.close());
  const records = (await logs.list({ access_key_id: key.id }, { limit: 5 })).items.sort((a, b) => a.status - b.status || a.attempt_count - b.attempt_count);
  t.match(
    records,
    [
      { status: 200, error_code: 'shutting_down', client_aborted: false, attempts: [{ status: 200, error_code: 'shutting_down' }] },
      { status: 503, error_code: 'shutting_down', client_aborted: false, attempt_count: 0 },
      { status: 503, error_code: 'shutting_down', client_aborted: false, attempts: [{ status: null, error_code: 'shutting_down' }] },
    ],
    'none is blamed on its client',
  );
  t.equal(records.length, 3, 'each has its record');
  t.equal(upstream.requests.length, 2, 'the cut upload never reached the upstream');
});

t.test('a plain answer cut mid-body when the shutdown grace runs out is recorded shutting_down, not as the upstream breaking', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    // The head and part of a JSON body, then nothing until the gateway gives up on it.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"id":"c","object":"chat.completion","choices":[');
  });
  t.teardown(() => upstream.close());
  const { server, dataDir, chatGroup, accessKey } = await serve(t, { shutdownGraceMs: 200 });
  await chatGroup(upstream.url, 'sk-upstream-e2e-0006');
  const key = await accessKey();
  const agent = new Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());
  const headSeen = deferred();
  const answer = chatOn(agent, server.url, key.value, false, () => headSeen.resolve()).then(
    () => 'ended',
    () => 'cut',
  );
  await headSeen.promise;
  await server.close();
  t.equal(await answer, 'cut', 'the client loses the unfinished body');
  const logs = openSqliteLogStore(dataDir);
  t.teardown(() => logs.close());
  const records = (await logs.list({ access_key_id: key.id }, { limit: 5 })).items;
  t.match(records, [{ status: 200, error_code: 'shutting_down', client_aborted: false }], 'the upstream is not blamed for the gateway\'s own stop');
});

t.test('shutdown ends a connection that never sent a request at once, rather than when the grace runs out', async (t) => {
  const { server, dataDir } = await serve(t, { shutdownGraceMs: 60_000 });
  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  const received: Buffer[] = [];
  socket.on('data', (c: Buffer) => received.push(c));
  let endedByGateway = false;
  socket.on('end', () => (endedByGateway = true));
  const closed = once(socket, 'close');
  const closing = server.close();
  // Bounds far below the 60 s grace: only the gateway ending the silent connection gets there.
  const [hadError] = await withTimeout(closed, 5000, 'the gateway to end the silent connection');
  t.equal(endedByGateway, true, 'the gateway ended the connection (its FIN), the client did not');
  t.equal(hadError, false, 'closed cleanly, not reset');
  t.equal(Buffer.concat(received).length, 0, 'with no answer written on it: there was no request to answer');
  await withTimeout(closing, 5000, 'the shutdown to finish with nothing in flight');
  const logs = openSqliteLogStore(dataDir);
  t.teardown(() => logs.close());
  t.same((await logs.list({}, { limit: 5 })).items, [], 'and nothing was recorded: a connection without a request is no request');
});
