import type { TokenUsage } from '../../../src/usage/index.ts';
import type { Operation } from './dataplane-scenarios.ts';

// Requests of every operation in its own protocol and the plausible answers of a substitute
// upstream, built from the generated OPERATIONS table: shared by the native route tests and
// the contract suite (test/contract/), so a new endpoint needs no new builder in either.

export const RESPONSE_ID = 'resp_0123abc';
export const VOICE_ID = 'voice_42';
export const NAMESPACE_REST = 'ns-ext/items';
export const FILE_BYTES = Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 13, 10, 45, 45, 13, 10, 0x89, 0x50, 0x4e, 0x47]);

// Every answer of the substitute upstream reports 7 tokens in and 3 out, in the usage fields
// of the operation's upstream API (upstreamUsage); the log record must show exactly these where
// the operation counts tokens, and none where it does not (a stored object's usage was counted
// when it was made).
export const UPSTREAM_INPUT_TOKENS = 7;
export const UPSTREAM_OUTPUT_TOKENS = 3;
export const NO_USAGE: TokenUsage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

export const externalModel = (op: Operation) => `team-${op.id}`;
export const upstreamModel = (op: Operation) => `vendor-${op.id}-v1`;

/** The client's path; `model` (default externalModel) where the path carries one. */
export function clientPath(op: Operation, model = externalModel(op)): string {
  return op.path.replace(/\{(\w+)\*?\}/g, (_, name: string) => paramValue(op, name, model));
}

/**
 * The path the upstream must see, written without the manifest's `upstream_path`: the client's
 * path with the model mapped where the path carries it, except the x-suite voices, served under
 * `/x-suite/v1/audio/voices` (decisions.md §2) and forwarded without the `/x-suite` prefix
 * (docs/design-choices.md).
 */
export function upstreamPath(op: Operation, model = upstreamModel(op)): string {
  const path = op.path.replace(/\{(\w+)\*?\}/g, (_, name: string) => paramValue(op, name, model));
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
export function streamQuery(op: Operation): string {
  if (op.stream === 'query_flag') return '?stream=true';
  if (op.stream === 'always') return '?alt=sse';
  return '';
}

export function clientBody(op: Operation, stream: boolean, model = externalModel(op)): { body?: string | FormData; headers: Record<string, string> } {
  if (op.body === 'none') return { headers: {} };
  const withModel = op.model === 'body' ? { model } : {};
  const streamFlag = stream && op.stream === 'body_flag';
  if (op.body === 'multipart') {
    const form = new FormData();
    if (op.model === 'body') form.append('model', model);
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
export function upstreamUsage(op: Operation): { member: Record<string, unknown>; usage: TokenUsage } {
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

export function method(op: Operation): string {
  return op.method === 'ANY' ? 'POST' : op.method;
}

/** Events in the framing of the operation's protocol; each carries a marker `evt-N`. */
export function streamEvents(op: Operation): string[] {
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

export interface NonStreamReply {
  status: number;
  contentType: string;
  body: Buffer;
  /** What the body reports (a JSON answer carries the upstream's usage member). */
  usage: TokenUsage;
}

export function nonStreamReply(op: Operation): NonStreamReply {
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

export function streams(op: Operation): boolean {
  return op.stream !== 'none';
}
