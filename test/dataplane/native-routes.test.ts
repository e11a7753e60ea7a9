import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { CHANNELS, PROTOCOL_IDS, type ChannelId } from '../../src/generated/index.ts';
import { startUpstreamAndDataPlane, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import {
  HTTP_OPERATIONS,
  clientAuthHeaders,
  createKey,
  deferred,
  expectedCredentialValue,
  nativeChannelFor,
  readIncrementally,
  seedGroup,
  splitUrl,
  upstreamCredentialHeader,
  waitForLog,
  withTimeout,
  type Deferred,
  type Operation,
} from './helpers/dataplane-scenarios.ts';
import {
  FILE_BYTES,
  NO_USAGE,
  clientBody,
  clientPath,
  externalModel,
  method,
  nonStreamReply,
  streamEvents,
  streamQuery,
  streams,
  upstreamModel,
  upstreamPath,
  upstreamUsage,
} from './helpers/native-requests.ts';

// Issue 4 item 8: every protocol has native routes tested, non-streaming and (where the
// operation streams) streaming. The cases come from the generated OPERATIONS table, so a new
// endpoint in protocols.yaml is covered without touching this file. The WebSocket operations
// (x-live `live`, x-suite `audio-transcriptions-realtime`) are covered by the WebSocket tests
// another engineer writes, not here.

const SECRET = 'sk-upstream-native-0123456789';

/** Lets the upstream send event N+1 only after the client has read event N. */
class ClientProgress {
  #text = '';
  #waiters: { marker: string; d: Deferred }[] = [];
  readonly late: string[] = [];

  saw(text: string): void {
    this.#text = text;
    for (const w of this.#waiters) if (text.includes(w.marker)) w.d.resolve();
  }

  async waitFor(marker: string): Promise<void> {
    if (this.#text.includes(marker)) return;
    const d = deferred();
    this.#waiters.push({ marker, d });
    try {
      await withTimeout(d.promise, 5000, `the client to receive ${marker}`);
    } catch {
      this.late.push(marker);
    }
  }
}

async function writeGated(res: ServerResponse, events: string[], progress: ClientProgress): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req-up-stream' });
  for (const [i, event] of events.entries()) {
    res.write(event);
    const marker = /evt-\d+/.exec(event)?.[0];
    if (marker && i < events.length - 1) await progress.waitFor(marker);
  }
  res.end();
}


t.test('every protocol of decisions.md §2 with an HTTP endpoint has a native route under test', async (t) => {
  const covered = new Set(HTTP_OPERATIONS.filter((op) => nativeChannelFor(op) !== undefined).map((op) => op.protocol));
  for (const protocol of PROTOCOL_IDS) {
    if (protocol === 'x-live') continue; // WebSocket only: the WebSocket tests cover it.
    t.ok(covered.has(protocol), `${protocol} is covered`);
  }
  for (const op of HTTP_OPERATIONS) t.ok(nativeChannelFor(op), `${op.id} has a native channel with an API-key style credential`);
});

for (const op of HTTP_OPERATIONS) {
  const channel = nativeChannelFor(op);
  if (channel === undefined) continue;
  const modes = streams(op) ? [false, true] : [false];
  for (const stream of modes) {
    // An operation that always streams is also called without `alt=sse` (JSON framing).
    const label = stream ? 'streaming' : op.stream === 'always' ? 'JSON framing' : 'non-streaming';
    t.test(`${op.protocol} ${op.id} on ${channel} (${label})`, async (t) => {
      await checkNativeRoute(t, op, channel, stream);
    });
  }
}

async function checkNativeRoute(t: Test, op: Operation, channel: ChannelId, stream: boolean): Promise<void> {
  const progress = new ClientProgress();
  const reply = nonStreamReply(op);
  const events = streamEvents(op);
  const { upstream, gw } = await startUpstreamAndDataPlane(t, async (_req: RecordedUpstreamRequest, res) => {
    if (stream) return writeGated(res, events, progress);
    res.writeHead(reply.status, { 'content-type': reply.contentType, 'content-length': reply.body.length, 'request-id': `req-up-${op.id}`, 'x-vendor-trace': 'trace-7' });
    res.end(reply.body);
  });
  const models = op.model === 'none' ? [{ external: 'unused-model', upstream: 'unused-model' }] : [{ external: externalModel(op), upstream: upstreamModel(op) }];
  const { group, credentials } = await seedGroup(gw.store, { channel, baseUrl: upstream.url, models, secrets: [SECRET] });
  const { key, keyValue } = await createKey(gw.store, { protocols: [op.protocol] });

  const { body, headers } = clientBody(op, stream);
  const res = await fetch(`${gw.url}${clientPath(op)}${stream ? streamQuery(op) : ''}`, {
    method: method(op),
    headers: { ...clientAuthHeaders(op.protocol, keyValue), ...headers },
    ...(body !== undefined ? { body } : {}),
  });

  const text = stream ? await readIncrementally(res, (soFar) => progress.saw(soFar)) : undefined;
  const bytes = stream ? undefined : Buffer.from(await res.arrayBuffer());

  // The upstream saw exactly one request, at the right path, with its own credential.
  const seen = upstream.requests[0];
  t.equal(upstream.requests.length, 1, 'one upstream request', { gatewayAnswered: res.status, body: text ?? bytes?.toString('utf8') });
  if (!seen) return;
  const { path, query } = splitUrl(seen.url);
  t.equal(seen.method, method(op), 'method');
  t.equal(path, upstreamPath(op), 'upstream path (model mapped in the path for generate style)');
  if (stream && op.stream === 'query_flag') t.equal(query.get('stream'), 'true', 'stream query flag forwarded');
  if (stream && op.stream === 'always') t.equal(query.get('alt'), 'sse', 'alt=sse forwarded');
  t.equal(seen.headers[upstreamCredentialHeader(op.protocol)], expectedCredentialValue(op.protocol, SECRET), `upstream credential in ${upstreamCredentialHeader(op.protocol)}`);
  t.notOk(JSON.stringify(seen.headers).includes(keyValue), 'the AccessKey never reaches the upstream');
  for (const h of ['authorization', 'x-api-key', 'x-goog-api-key'] as const) {
    if (h !== upstreamCredentialHeader(op.protocol)) t.equal(seen.headers[h], undefined, `no ${h} upstream`);
  }
  await checkForwardedBody(t, op, seen, stream);

  // The response comes back as the upstream sent it.
  t.equal(res.status, stream ? 200 : reply.status, 'status');
  const requestId = res.headers.get('x-switchyard-request-id');
  t.ok(requestId, 'gateway request id header');
  if (stream) {
    t.match(res.headers.get('content-type'), /^text\/event-stream/, 'content-type');
    t.equal(res.headers.get('request-id'), 'req-up-stream', 'upstream request id header');
    t.equal(text, events.join(''), 'every event arrives intact and in order');
    t.same(progress.late, [], 'each event reached the client before the upstream sent the next');
  } else {
    t.equal(res.headers.get('content-type'), reply.contentType, 'content-type');
    t.equal(res.headers.get('request-id'), `req-up-${op.id}`, 'upstream request id header');
    t.equal(res.headers.get('x-vendor-trace'), 'trace-7', 'other upstream headers');
    t.ok(bytes?.equals(reply.body), 'body byte for byte');
  }

  const record = await waitForLog(gw, requestId);
  t.match(
    record,
    {
      access_key_id: key.id,
      group_id: String(group.id),
      channel,
      credential_id: String(credentials[0]!.id),
      protocol: op.protocol,
      operation: op.id,
      route_mode: CHANNELS[channel].cells[op.capability].mode,
      effective: 'native',
      external_model: op.model === 'none' ? null : externalModel(op),
      upstream_model: op.model === 'none' ? null : upstreamModel(op),
      status: stream ? 200 : reply.status,
      error_code: null,
      attempt_count: 1,
      client_aborted: false,
    },
    'log record',
  );
  // Every stream above ends with the upstream's usage; stored objects carry it too.
  const reported = stream ? upstreamUsage(op).usage : reply.usage;
  t.same(record.usage, op.counts_tokens ? reported : NO_USAGE, op.counts_tokens ? 'usage as the upstream reported it' : 'no usage: the operation runs no model');
}

async function checkForwardedBody(t: Test, op: Operation, seen: RecordedUpstreamRequest, stream: boolean): Promise<void> {
  if (op.body === 'none') {
    t.equal(seen.body.length, 0, 'no body');
    return;
  }
  if (op.body === 'multipart') {
    const form = await new Response(new Uint8Array(seen.body), { headers: { 'content-type': String(seen.headers['content-type']) } }).formData();
    if (op.model === 'body') t.equal(form.get('model'), upstreamModel(op), 'model mapped in the form');
    t.equal(form.get('prompt'), 'hello from the client', 'other fields kept');
    if (stream && op.stream === 'body_flag') t.equal(form.get('stream'), 'true', 'stream flag kept');
    const file = form.get('file');
    t.ok(file instanceof Blob && Buffer.from(await file.arrayBuffer()).equals(FILE_BYTES), 'file part byte for byte');
    return;
  }
  const sent = JSON.parse(seen.body.toString('utf8')) as Record<string, unknown>;
  if (op.model === 'body') t.equal(sent['model'], upstreamModel(op), 'model mapped in the body');
  else t.notOk('model' in sent, 'no model added');
  t.same(sent['vendor_extension'], { keep: [1, 'two'] }, 'unknown fields preserved');
  t.equal(sent['input'], 'hello');
  if (stream && op.stream === 'body_flag') t.equal(sent['stream'], true, 'stream flag kept');
}
