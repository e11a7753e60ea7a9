import type { ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { seedRoute, startUpstreamAndDataPlane, type Gateway, type RecordedUpstreamRequest, type Upstream } from '../../dataplane/helpers/data-plane-harness.ts';

/**
 * Substitute upstreams that answer in the vendors' own wire formats, so the official SDKs
 * parse what switchyard passes through exactly as they parse the vendor.
 */

export interface SseFrame {
  /** The `event:` line; omitted for completions and generate style streams. */
  event?: string;
  /** JSON-encoded unless a string (e.g. `[DONE]`). */
  data: unknown;
}

export function sseText(frames: readonly SseFrame[], eol = '\n'): string {
  return frames
    .map((f) => `${f.event !== undefined ? `event: ${f.event}${eol}` : ''}data: ${typeof f.data === 'string' ? f.data : JSON.stringify(f.data)}${eol}${eol}`)
    .join('');
}

export function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A whole SSE response, one write per event (as a vendor flushes them). */
export async function writeSse(res: ServerResponse, frames: readonly SseFrame[], o: { headers?: Record<string, string>; eol?: string } = {}): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...(o.headers ?? {}) });
  for (const frame of frames) await write(res, sseText([frame], o.eol));
  res.end();
}

/**
 * The upstream breaks mid-stream: it sends `frames` (and optionally the first half of one
 * more event), then destroys the socket without finishing the chunked body.
 */
export async function writeSseThenBreak(res: ServerResponse, frames: readonly SseFrame[], o: { partial?: string; eol?: string } = {}): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  for (const frame of frames) await write(res, sseText([frame], o.eol));
  if (o.partial !== undefined) await write(res, o.partial);
  res.socket?.destroy();
}

function write(res: ServerResponse, text: string): Promise<void> {
  return new Promise((resolve, reject) => res.write(text, (err) => (err ? reject(err) : resolve())));
}

export function jsonBody(req: RecordedUpstreamRequest): Record<string, unknown> {
  return JSON.parse(req.body.toString('utf8')) as Record<string, unknown>;
}

export interface SdkRig {
  gw: Gateway;
  upstream: Upstream;
  keyValue: string;
  keyId: number;
  groupId: number;
}

/**
 * A fresh gateway (real stores in a temp dir), one substitute upstream and a Group on
 * `channel` mapping `external` to `upstreamModel`; everything closed at teardown. A fresh
 * rig per test keeps cooldowns and disabled credentials from leaking between tests.
 */
export async function rig(
  t: Test,
  o: { channel: string; protocols: string[]; external: string; upstreamModel: string; upstreamKey?: string },
  respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>,
): Promise<SdkRig> {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, respond);
  const seeded = await seedRoute(gw.store, {
    channel: o.channel,
    baseUrl: upstream.url,
    models: [{ external: o.external, upstream: o.upstreamModel }],
    protocols: o.protocols,
    upstreamKeys: [o.upstreamKey ?? 'sk-upstream-1'],
  });
  return { gw, upstream, keyValue: seeded.keyValue, keyId: seeded.key.id, groupId: seeded.group.id };
}

/** The log record of a request, after the batched writer flushed it. */
export async function logOf(gw: Gateway, requestId: string | null | undefined) {
  if (!requestId) throw new Error('the response carried no x-request-id');
  await gw.logs.flush();
  return gw.logs.get(requestId);
}

/** The client's key must never reach the upstream, in any header or in the body. */
export function leaksKey(req: RecordedUpstreamRequest, keyValue: string): boolean {
  return JSON.stringify(req.headers).includes(keyValue) || req.url.includes(keyValue) || req.body.toString('utf8').includes(keyValue);
}

// ---------- completions style ----------

const CREATED = 1_741_569_952;

export function chatCompletion(model: string, text: string, usage = { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 }) {
  return {
    id: 'chatcmpl-up-1',
    object: 'chat.completion',
    created: CREATED,
    model,
    system_fingerprint: 'fp_up',
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
    usage: { ...usage, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } },
    service_tier: 'default',
  };
}

/**
 * chat.completion.chunk events as a vendor streams them: a role chunk, one chunk per piece,
 * a finish chunk; with `include_usage` every chunk carries `usage: null` and a last chunk
 * with empty `choices` carries the usage; then `[DONE]`.
 */
export function chatChunks(model: string, pieces: readonly string[], includeUsage: boolean, usage = { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 }): SseFrame[] {
  const base = { id: 'chatcmpl-up-2', object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: 'fp_up', service_tier: 'default' };
  const u = includeUsage ? { usage: null } : {};
  const frames: SseFrame[] = [
    { data: { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], ...u } },
    ...pieces.map((p) => ({ data: { ...base, choices: [{ index: 0, delta: { content: p }, logprobs: null, finish_reason: null }], ...u } })),
    { data: { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...u } },
  ];
  if (includeUsage) frames.push({ data: { ...base, choices: [], usage: { ...usage, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 } } } });
  frames.push({ data: '[DONE]' });
  return frames;
}

// ---------- responses style ----------

export function responseObject(model: string, text: string, status: 'in_progress' | 'completed', usage?: { input_tokens: number; output_tokens: number }) {
  return {
    id: 'resp_up_1',
    object: 'response',
    created_at: CREATED,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output:
      status === 'completed'
        ? [{ id: 'msg_up_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] }]
        : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: true,
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: usage
      ? { input_tokens: usage.input_tokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: usage.output_tokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input_tokens + usage.output_tokens }
      : null,
    user: null,
    metadata: {},
  };
}

/** The responses event sequence for one text message, `event:` lines and sequence numbers included. */
export function responseEvents(model: string, pieces: readonly string[], usage = { input_tokens: 13, output_tokens: 6 }): SseFrame[] {
  const text = pieces.join('');
  const item = { id: 'msg_up_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] as unknown[] };
  const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
  const bodies: Record<string, unknown>[] = [
    { type: 'response.created', response: responseObject(model, '', 'in_progress') },
    { type: 'response.in_progress', response: responseObject(model, '', 'in_progress') },
    { type: 'response.output_item.added', output_index: 0, item },
    { type: 'response.content_part.added', item_id: 'msg_up_1', output_index: 0, content_index: 0, part },
    ...pieces.map((delta) => ({ type: 'response.output_text.delta', item_id: 'msg_up_1', output_index: 0, content_index: 0, delta, logprobs: [] })),
    { type: 'response.output_text.done', item_id: 'msg_up_1', output_index: 0, content_index: 0, text, logprobs: [] },
    { type: 'response.content_part.done', item_id: 'msg_up_1', output_index: 0, content_index: 0, part: { ...part, text } },
    { type: 'response.output_item.done', output_index: 0, item: { ...item, status: 'completed', content: [{ ...part, text }] } },
    { type: 'response.completed', response: responseObject(model, text, 'completed', usage) },
  ];
  return bodies.map((b, i) => ({ event: b['type'] as string, data: { ...b, sequence_number: i } }));
}

// ---------- messages style ----------

export function message(model: string, text: string, usage = { input_tokens: 21, output_tokens: 8 }) {
  return {
    id: 'msg_up_01',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { ...usage, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: 'standard' },
  };
}

/** message_start, content_block_start, ping, deltas, content_block_stop, message_delta, message_stop. */
export function messageEvents(model: string, pieces: readonly string[], usage = { input_tokens: 17, output_tokens: 7 }): SseFrame[] {
  const bodies: Record<string, unknown>[] = [
    {
      type: 'message_start',
      message: { id: 'msg_up_02', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' } },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'ping' },
    ...pieces.map((text) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output_tokens } },
    { type: 'message_stop' },
  ];
  return bodies.map((b) => ({ event: b['type'] as string, data: b }));
}

// ---------- generate style ----------

export function generateResponse(model: string, text: string, usage = { promptTokenCount: 6, candidatesTokenCount: 3 }, finished = true) {
  return {
    candidates: [{ content: { parts: [{ text }], role: 'model' }, ...(finished ? { finishReason: 'STOP' } : {}), index: 0 }],
    usageMetadata: { ...usage, totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount, promptTokensDetails: [{ modality: 'TEXT', tokenCount: usage.promptTokenCount }] },
    modelVersion: model,
    responseId: 'gen-up-1',
  };
}

/** streamGenerateContent?alt=sse chunks: cumulative usageMetadata on each, finishReason on the last. */
export function generateChunks(model: string, pieces: readonly string[], usage = { promptTokenCount: 8, candidatesTokenCount: 4 }): SseFrame[] {
  return pieces.map((p, i) => {
    const last = i === pieces.length - 1;
    return { data: generateResponse(model, p, { promptTokenCount: usage.promptTokenCount, candidatesTokenCount: last ? usage.candidatesTokenCount : i + 1 }, last) };
  });
}
