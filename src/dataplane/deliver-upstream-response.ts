import type { ServerResponse } from 'node:http';
import { JsonArrayStreamSplitter, jsonArrayStreamErrorTail, SseParser, streamErrorEvent, watchIdle, type SseEvent, type StreamErrorStyle, type StreamFailure } from '../streaming/index.ts';
import { clientResponseHeaders, type UpstreamResponse } from '../upstream/index.ts';
import { extractUsage, isUsageOnlyChunk, StreamUsageAccumulator, type TokenUsage, type UsageStyle } from '../usage/index.ts';
import { writeChunk } from './write-chunk.ts';
import { withRequestId } from './request-id-headers.ts';

export interface DeliveryOptions {
  res: ServerResponse;
  requestId: string;
  streamStyle: StreamErrorStyle;
  usageStyle: UsageStyle | undefined;
  /** The gateway asked for stream usage on the client's behalf: drop the usage-only chunk. */
  dropUsageChunk: boolean;
  idleTimeoutMs: number;
  /** Aborts the upstream request. */
  abort: AbortController;
  onFirstByte(): void;
  /** Largest non-streaming body kept aside to read usage and ids from. */
  captureLimitBytes: number;
  /** The operation always streams: a JSON answer is a stream framed as one array (generate style without alt=sse). */
  streamingOperation: boolean;
}

export interface DeliveryOutcome {
  usage: TokenUsage | undefined;
  /** A reason code when the stream was ended by the gateway (idle upstream, broken upstream). */
  streamFailure: string | undefined;
  clientAborted: boolean;
  /** `id` of a created response, for routing later resource calls back to the same upstream. */
  responseId: string | undefined;
}

/**
 * Sends an upstream response to the client as it arrives: status, headers and body as the
 * upstream sent them. SSE goes event by event; an idle or broken upstream stream ends with the
 * client protocol's error event.
 */
export async function deliverUpstreamResponse(upstream: UpstreamResponse, o: DeliveryOptions): Promise<DeliveryOutcome> {
  const headers = clientResponseHeaders(upstream.headers);
  const contentType = String(upstream.headers['content-type'] ?? '');
  const isSse = contentType.includes('text/event-stream');
  const isJsonArrayStream = !isSse && o.streamingOperation && upstream.status < 300 && contentType.includes('json');
  // Events are re-framed one by one (and an error event may follow): the length may change.
  if (isSse || isJsonArrayStream) delete headers['content-length'];
  withRequestId(headers, o.requestId);
  o.res.writeHead(upstream.status, headers);
  const outcome: DeliveryOutcome = { usage: undefined, streamFailure: undefined, clientAborted: false, responseId: undefined };
  const onClose = () => {
    if (!o.res.writableFinished) {
      outcome.clientAborted = true;
      o.abort.abort();
    }
  };
  o.res.once('close', onClose);
  try {
    if (isSse) await pipeSse(upstream, o, outcome);
    else if (isJsonArrayStream) await pipeJsonArray(upstream, o, outcome);
    else await pipeBody(upstream, o, outcome, contentType.includes('json'));
  } finally {
    o.res.off('close', onClose);
  }
  if (!o.res.writableEnded && !o.res.destroyed) o.res.end();
  return outcome;
}

/** Ends an upstream stream that stays silent for the idle timeout, recording why. */
function watchUpstreamIdle(upstream: UpstreamResponse, o: DeliveryOptions, outcome: DeliveryOutcome) {
  return watchIdle(o.idleTimeoutMs, () => {
    outcome.streamFailure = 'upstream_idle_timeout';
    o.abort.abort();
    upstream.body.destroy();
  });
}

function streamFailureOf(code: string): StreamFailure {
  const idle = code === 'upstream_idle_timeout';
  return { kind: idle ? 'timeout' : 'upstream', code, message: idle ? 'The upstream stopped sending; the stream was ended.' : 'The upstream stream broke off.' };
}

/** A responses stream event's `sequence_number` (no nested object of these events has one). */
const SEQUENCE_NUMBER = /"sequence_number"\s*:\s*(\d+)/;

async function pipeSse(upstream: UpstreamResponse, o: DeliveryOptions, outcome: DeliveryOutcome): Promise<void> {
  const parser = new SseParser();
  const usage = o.usageStyle ? new StreamUsageAccumulator(o.usageStyle) : undefined;
  const idle = watchUpstreamIdle(upstream, o, outcome);
  let first = true;
  // Only complete events are written (each exactly as received, those of one chunk in one
  // write): a stream that breaks inside an event must not leave half an event in front of
  // the error event, or the client's SSE parser glues the two together.
  // responses style: the error event continues the stream's sequence numbers.
  let nextSequence = 0;
  const forward = async (events: readonly SseEvent[]) => {
    let out = '';
    for (const event of events) {
      if (o.streamStyle === 'responses' && event.data !== undefined) {
        const seq = SEQUENCE_NUMBER.exec(event.data);
        if (seq) nextSequence = Math.max(nextSequence, Number(seq[1]) + 1);
      }
      const parsed = event.data !== undefined && usage ? usage.push(event.data) : undefined;
      if (outcome.responseId === undefined && event.data?.includes('"response.created"')) outcome.responseId = idOf(parsed ?? parseOrUndefined(event.data));
      if (o.dropUsageChunk && parsed !== undefined && isUsageOnlyChunk(parsed)) continue;
      out += event.raw;
    }
    if (out === '') return;
    if (first) (first = false), o.onFirstByte();
    await writeChunk(o.res, out);
  };
  let ended = false;
  try {
    for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
      idle.touch();
      await forward(parser.push(chunk));
    }
    ended = true;
  } catch {
    if (!outcome.clientAborted && outcome.streamFailure === undefined) outcome.streamFailure = 'upstream_stream_broken';
  } finally {
    idle.stop();
  }
  // A stream that ended cleanly passes on a last block sent without its blank line, as sent.
  if (ended && outcome.streamFailure === undefined && !o.res.destroyed) await forward(parser.end());
  outcome.usage = usage?.result();
  if (outcome.streamFailure && !outcome.clientAborted && !o.res.destroyed) {
    o.res.write(streamErrorEvent(o.streamStyle, streamFailureOf(outcome.streamFailure), { sequenceNumber: nextSequence }));
  }
}

/**
 * A stream framed as one JSON array: passed on byte for byte as it arrives, with usage read
 * from its elements. A stall or break closes the array with an error element when the stream
 * stands between elements; inside an element nothing valid can follow, so the response ends.
 */
async function pipeJsonArray(upstream: UpstreamResponse, o: DeliveryOptions, outcome: DeliveryOutcome): Promise<void> {
  const splitter = new JsonArrayStreamSplitter();
  const usage = o.usageStyle ? new StreamUsageAccumulator(o.usageStyle) : undefined;
  const idle = watchUpstreamIdle(upstream, o, outcome);
  let first = true;
  try {
    for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
      idle.touch();
      for (const element of splitter.push(chunk)) usage?.push(element);
      if (first) (first = false), o.onFirstByte();
      await writeChunk(o.res, chunk);
    }
    for (const element of splitter.end()) usage?.push(element);
  } catch {
    if (!outcome.clientAborted && outcome.streamFailure === undefined) outcome.streamFailure = 'upstream_stream_broken';
  } finally {
    idle.stop();
  }
  outcome.usage = usage?.result();
  if (!outcome.streamFailure || outcome.clientAborted || o.res.destroyed) return;
  const failure = streamFailureOf(outcome.streamFailure);
  const at = splitter.boundary();
  if (at === 'inside_element' || at === 'closed') o.res.destroy();
  else o.res.write(`${at === 'before_open' ? '[' : ''}${jsonArrayStreamErrorTail(failure, at === 'after_element' ? 1 : 0)}`);
}

async function pipeBody(upstream: UpstreamResponse, o: DeliveryOptions, outcome: DeliveryOutcome, isJson: boolean): Promise<void> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let first = true;
  try {
    for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
      if (first) (first = false), o.onFirstByte();
      if (isJson && keptBytes + chunk.length <= o.captureLimitBytes) {
        kept.push(chunk);
        keptBytes += chunk.length;
      } else {
        keptBytes = Infinity;
      }
      await writeChunk(o.res, chunk);
    }
  } catch {
    if (!outcome.clientAborted) outcome.streamFailure = 'upstream_stream_broken';
    o.res.destroy();
    return;
  }
  if (first) o.onFirstByte();
  if (isJson && keptBytes !== Infinity && kept.length) {
    const parsed = parseOrUndefined(Buffer.concat(kept).toString('utf8'));
    if (o.usageStyle && parsed !== undefined) outcome.usage = extractUsage(o.usageStyle, parsed);
    outcome.responseId = idOf(parsed);
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The `id` of a response object, or of the `response` a stream event carries. */
function idOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as { id?: unknown; response?: { id?: unknown } };
  const id = v.response?.id ?? v.id;
  return typeof id === 'string' ? id : undefined;
}
