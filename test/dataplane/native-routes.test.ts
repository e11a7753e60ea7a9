import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { CHANNELS, PROTOCOL_IDS, type ChannelId } from '../../src/generated/index.ts';
import type { TokenUsage } from '../../src/usage/index.ts';
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

// Issue 4 item 8: every protocol has native routes tested, non-streaming and (where the
// operation streams) streaming. The cases come from the generated OPERATIONS table, so a new
// endpoint in protocols.yaml is covered without touching this file. The WebSocket operations
// (x-live `live`, x-suite `audio-transcriptions-realtime`) are covered by the WebSocket tests
// another engineer writes, not here.

const SECRET = 'sk-upstream-native-0123456789';
const RESPONSE_ID = 'resp_0123abc';
const VOICE_ID = 'voice_42';
const NAMESPACE_REST = 'ns-ext/items';
const FILE_BYTES = Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 13, 10, 45, 45, 13, 10, 0x89, 0x50, 0x4e, 0x47]);

// Every answer of the substitute upstream reports 7 tokens in and 3 out, in the usage fields
// of the operation's upstream API (upstreamUsage); the log record must show exactly these where
// the operation counts tokens, and none where it does not (a stored object's usage was counted
// when it was made).
const UPSTREAM_INPUT_TOKENS = 7;
const UPSTREAM_OUTPUT_TOKENS = 3;
const NO_USAGE: TokenUsage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

const externalModel = (op: Operation) => `team-${op.id}`;
const upstreamModel = (op: Operation) => `vendor-${op.id}-v1`;

function clientPath(op: Operation): string {
  return op.path.replace(/\{(\w+)\*?\}/g, (_, name: string) => paramValue(op, name, externalModel(op)));
}

/**
 * The path the upstream must see, written without the manifest's `upstream_path`: the client's
 * path with the model mapped where the path carries it, except the x-suite voices, served under
 * `/x-suite/v1/audio/voices` (decisions.md §2) and forwarded without the `/x-suite` prefix
 * (docs/design-choices.md).
 */
function upstreamPath(op: Operation): string {
  const path = op.path.replace(/\{(\w+)\*?\}/g, (_, name: string) => paramValue(op, name, upstreamModel(op)));
  return path.startsWith('/x-suite/v1/audio/voices') ? path.slice('/x-suite'.length) : path;
}

function paramValue(op: Operation, name: string, model: string): string {
  if (name === 'model') return model;
  if (name === 'response_id') return RESPONSE_ID;
  if (name === 'voice_id') return VOICE_ID;
  if (name === 'rest') return NAMESPACE_REST;
  throw new Error(`${op.id}: no test value for path parameter {${name}}`);
}

/** The query a client adds to ask for streaming (or the SSE framing of generate style). */
function streamQuery(op: Operation): string {
  if (op.stream === 'query_flag') return '?stream=true';
  if (op.stream === 'always') return '?alt=sse';
  return '';
}

function clientBody(op: Operation, stream: boolean): { body?: string | FormData; headers: Record<string, string> } {
  if (op.body === 'none') return { headers: {} };
  const withModel = op.model === 'body' ? { model: externalModel(op) } : {};
  const streamFlag = stream && op.stream === 'body_flag';
  if (op.body === 'multipart') {
    const form = new FormData();
    if (op.model === 'body') form.append('model', externalModel(op));
    form.append('prompt', 'hello from the client');
    if (streamFlag) form.append('stream', 'true');
    form.append('file', new Blob([FILE_BYTES], { type: 'application/octet-stream' }), 'sample.bin');
    return { body: form, headers: {} };
  }
  // Completions: the client asks for usage itself, so the stream is passed on byte for byte.
  const usage = streamFlag && op.protocol === 'x-completions' ? { stream_options: { include_usage: true } } : {};
  return {
    body: JSON.stringify({ ...withModel, input: 'hello', vendor_extension: { keep: [1, 'two'] }, ...(streamFlag ? { stream: true } : {}), ...usage }),
    headers: { 'content-type': 'application/json' },
  };
}

/** The usage member(s) the operation's upstream API puts in an answer, and the counts they mean. */
function upstreamUsage(op: Operation): { member: Record<string, unknown>; usage: TokenUsage } {
  const input = UPSTREAM_INPUT_TOKENS;
  const output = UPSTREAM_OUTPUT_TOKENS;
  const inOut = { ...NO_USAGE, input_tokens: input, output_tokens: output };
  switch (op.protocol) {
    case 'x-responses':
      return { member: { usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } }, usage: inOut };
    case 'x-images':
      // images.d.ts ImagesResponse.Usage / ImageGenCompletedEvent.Usage: input_tokens sums text and image tokens.
      return { member: { usage: { input_tokens: input, input_tokens_details: { text_tokens: input - 2, image_tokens: 2 }, output_tokens: output, total_tokens: input + output } }, usage: inOut };
    case 'x-messages':
      return { member: { usage: { input_tokens: input, output_tokens: output } }, usage: inOut };
    case 'x-generate':
      return { member: { usageMetadata: { promptTokenCount: input, candidatesTokenCount: output, totalTokenCount: input + output } }, usage: inOut };
    case 'x-embeddings':
      return { member: { usageMetadata: { promptTokenCount: input, totalTokenCount: input } }, usage: { ...NO_USAGE, input_tokens: input } };
    case 'x-chat-embeddings':
      return { member: { usage: { prompt_tokens: input, total_tokens: input } }, usage: { ...NO_USAGE, input_tokens: input } };
    case 'x-suite':
      // OpenAI's token-billed transcriptions (Transcription.Tokens, TranscriptionTextDoneEvent.Usage) and
      // speech stream (speech.audio.done) name the counters as responses does; input_tokens sums the details.
      if (op.id === 'audio-transcriptions' || op.id === 'audio-speech') {
        const details = op.id === 'audio-transcriptions' ? { type: 'tokens', input_token_details: { text_tokens: input - 5, audio_tokens: 5 } } : {};
        return { member: { usage: { ...details, input_tokens: input, output_tokens: output, total_tokens: input + output } }, usage: inOut };
      }
      // OCR, FIM and the rest answer the completions names.
      return { member: { usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }, usage: inOut };
    case 'rerank':
      // The /v1/rerank answer's usage: its total only.
      return { member: { usage: { total_tokens: input } }, usage: { ...NO_USAGE, input_tokens: input } };
    default:
      // Completions names: chat completions and the decisions upstreams.
      return { member: { usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }, usage: inOut };
  }
}

function method(op: Operation): string {
  return op.method === 'ANY' ? 'POST' : op.method;
}

/** Events in the framing of the operation's protocol; each carries a marker `evt-N`. */
function streamEvents(op: Operation): string[] {
  const m = upstreamModel(op);
  const usage = upstreamUsage(op).member;
  switch (op.protocol) {
    case 'x-completions':
      return [
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: m, choices: [{ index: 0, delta: { content: 'evt-1' } }] })}\n\n`,
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: m, choices: [{ index: 0, delta: { content: 'evt-2' }, finish_reason: 'stop' }] })}\n\n`,
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: m, choices: [], ...usage, marker: 'evt-3' })}\n\n`,
        'data: [DONE]\n\n',
      ];
    case 'x-responses':
      return [
        `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: RESPONSE_ID, model: m, status: 'in_progress' }, marker: 'evt-1' })}\n\n`,
        `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, delta: 'evt-2' })}\n\n`,
        `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', sequence_number: 2, response: { id: RESPONSE_ID, model: m, status: 'completed', ...usage }, marker: 'evt-3' })}\n\n`,
      ];
    case 'x-messages':
      return [
        `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: m, usage: { input_tokens: UPSTREAM_INPUT_TOKENS, output_tokens: 1 } }, marker: 'evt-1' })}\n\n`,
        `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'evt-2' } })}\n\n`,
        `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: UPSTREAM_OUTPUT_TOKENS }, marker: 'evt-3' })}\n\n`,
        `event: message_stop\ndata: ${JSON.stringify({ type: 'message_stop', marker: 'evt-4' })}\n\n`,
      ];
    case 'x-generate':
      // Generate-style SSE separates events with CRLF pairs.
      return [
        `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'evt-1' }], role: 'model' } }], modelVersion: m })}\r\n\r\n`,
        `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'evt-2' }], role: 'model' }, finishReason: 'STOP' }], ...usage })}\r\n\r\n`,
      ];
    case 'x-images': {
      // images.d.ts ImageGenStreamEvent / ImageEditStreamEvent: the completed event carries the usage.
      const type = op.id === 'images-edits' ? 'image_edit' : 'image_generation';
      const image = { background: 'opaque', created_at: 1750000000, output_format: 'png', quality: 'low', size: '1024x1024' };
      return [
        `event: ${type}.partial_image\ndata: ${JSON.stringify({ type: `${type}.partial_image`, b64_json: 'evt-1', partial_image_index: 0, ...image })}\n\n`,
        `event: ${type}.partial_image\ndata: ${JSON.stringify({ type: `${type}.partial_image`, b64_json: 'evt-2', partial_image_index: 1, ...image })}\n\n`,
        `event: ${type}.completed\ndata: ${JSON.stringify({ type: `${type}.completed`, b64_json: 'evt-3', ...image, ...usage })}\n\n`,
      ];
    }
    default: {
      // x-suite: audio.speech.create({stream_format: 'sse'}) and audio.transcriptions.create({stream: true}):
      // deltas, then a done event carrying the usage; other operations name their events by their id.
      const type = op.id === 'audio-speech' ? 'speech.audio' : op.id === 'audio-transcriptions' ? 'transcript.text' : op.id;
      return [
        `event: ${type}.delta\ndata: ${JSON.stringify({ type: `${type}.delta`, delta: 'evt-1' })}\n\n`,
        `event: ${type}.delta\ndata: ${JSON.stringify({ type: `${type}.delta`, delta: 'evt-2' })}\n\n`,
        `event: ${type}.done\ndata: ${JSON.stringify({ type: `${type}.done`, ...usage, marker: 'evt-3' })}\n\n`,
      ];
    }
  }
}

interface NonStreamReply {
  status: number;
  contentType: string;
  body: Buffer;
  /** What the body reports (a JSON answer carries the upstream's usage member). */
  usage: TokenUsage;
}

function nonStreamReply(op: Operation): NonStreamReply {
  if (op.id === 'audio-speech') return { status: 200, contentType: 'audio/mpeg', body: Buffer.from([0x49, 0x44, 0x33, 0x04, 0, 0, 0xff, 0xfb, 0x90, 0x64]), usage: NO_USAGE };
  const status = op.id === 'voices-create' ? 201 : 200;
  // Spacing and key order a re-serialisation would lose.
  const { member, usage } = upstreamUsage(op);
  const usageText = Object.entries(member).map(([k, v]) => `, "${k}": ${JSON.stringify(v)}`).join('');
  const object = `{ "id" : "${op.id === 'responses-create' ? RESPONSE_ID : `obj-${op.id}`}",  "echo": "${op.id}", "model": "${upstreamModel(op)}", "unknown_upstream_field": {"a": [1, 2.50, null]}${usageText} }`;
  // An always-streaming operation called without `alt=sse` answers one JSON array of its chunks.
  const body = op.stream === 'always' ? `[${object}]\n` : `${object}\n`;
  return { status, contentType: 'application/json; charset=utf-8', body: Buffer.from(body), usage };
}

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

function streams(op: Operation): boolean {
  return op.stream !== 'none';
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
