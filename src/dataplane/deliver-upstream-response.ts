import { clientResponseHeaders, type OutgoingHeaders, type UpstreamReply } from '../upstream/index.ts';
import { decodable, decodedReply } from './decode-reply-body.ts';
import { withRequestId } from './request-id-headers.ts';
import { maskSecretInHeaders } from './mask-upstream-secret.ts';
import { awaitAnswerTail } from './relay/await-answer-tail.ts';
import { BodyRelay } from './relay/relay-body.ts';
import { CompressedBodyRelay } from './relay/relay-compressed-body.ts';
import { RelayContext, type DeliveryOptions, type DeliveryOutcome } from './relay/relay-context.ts';
import { JsonArrayRelay } from './relay/relay-json-array.ts';
import { SniffedStreamRelay } from './relay/relay-sniffed-stream.ts';
import { SseRelay } from './relay/relay-sse.ts';

export type { DeliveryOptions, DeliveryOutcome } from './relay/relay-context.ts';

/**
 * How long a successful SSE stream's status and headers wait for its first bytes. Long enough
 * for a stream that fails at once to be answered with an HTTP error; short, as an SDK's timeout
 * runs until the headers come (and it retries a timeout): a model that thinks first must not
 * time it out where it would not without the gateway.
 */
const HEAD_HOLD_MS = 2000;

/**
 * How long the upstream is read on for its usage after a client left once the upstream's work
 * was done (StreamRelay.awaitsOnlyUsage, BodyRelay.awaitsOnlyUsage): the usage chunk follows the
 * finish at once, a plain body's rest is already on its way, and a client that stops reading
 * there must not go unbilled, nor past its quota.
 */
const USAGE_AFTER_CLIENT_LEFT_MS = 2000;

/**
 * Sends an upstream reply to the client as it arrives: status, headers and body as the
 * upstream sent them. SSE (by its content type or, answering a stream request uncompressed, by
 * its first bytes) goes event by event; an idle or broken upstream stream ends with the
 * client protocol's error event, or, when it fails before its first byte and within
 * HEAD_HOLD_MS, is answered with the gateway's HTTP error instead (its status is held until then).
 * So is a plain body that fails before its first byte; one that fails after is cut. A client that leaves aborts the upstream request. Whatever the
 * status, no credential header reaches the client and `secret` (the upstream's) is masked in
 * the header values; a body below 400 goes as sent (a stream compressed in a coding the gateway
 * decodes goes decoded, its events being read; a plain JSON body so compressed goes as sent,
 * decoded beside it for its usage), but for the upstream's own error in a stream, and a JSON
 * error object in place of a stream (decoded, when it came so compressed), in which `secret`
 * is masked too.
 */
export function deliverUpstreamResponse(upstream: UpstreamReply, options: DeliveryOptions, secret?: string): Promise<DeliveryOutcome> {
  const { res } = options;
  // Media types are case-insensitive (RFC 9110 §8.3.1): lower-cased once for the tests below.
  const contentType = String(upstream.headers['content-type'] ?? '').toLowerCase();
  const isJson = contentType.includes('json');
  const coded = upstream.headers['content-encoding'] !== undefined;
  // A stream compressed although the gateway asked for identity: decoded to read its events,
  // or, in a coding the gateway cannot decode, passed on untouched (no usage read, no event added).
  const opaque = coded && !decodable(upstream.headers);
  const isSse = !opaque && contentType.includes('text/event-stream');
  // Framed as one JSON array; a body that does not open with `[` goes on as a plain body (JsonArrayRelay decides on its first bytes).
  const isJsonArrayStream = !opaque && !isSse && options.streamingOperation && upstream.status < 300 && isJson;
  // A stream request's answer under another content type (some upstreams send their streams as
  // text/plain): its first bytes decide (SniffedStreamRelay). Never a text/event-stream answer,
  // nor media (streamed speech audio), whose arbitrary first bytes may read as a field line.
  const sniffs = !isSse && !isJsonArrayStream && !coded && upstream.status < 300 && options.streamRequested === true && !isMedia(contentType);
  // An event may be dropped and an error event may follow: the length may change. A 204 has no
  // length to send (RFC 9110 §8.6): an upstream's, wrong or not, would fail undici 7's client.
  const headers = clientResponseHeaders(upstream.headers, isSse || isJsonArrayStream || upstream.status === 204);
  const reply = coded && (isSse || isJsonArrayStream) ? decodedReply(upstream, headers) : upstream;
  // A plain answer so compressed goes as sent, decoded beside it for its usage, or, in place of a
  // stream, to find an error object, which goes decoded and masked. Decided once per answer: an
  // uncompressed one pays this one test.
  const decodedBeside = coded && !opaque && !isSse && !isJsonArrayStream && isJson && upstream.status < 400 && (options.usageStyle !== undefined || options.captureResponseId || (secret !== undefined && upstream.status < 300 && options.streamRequested === true));
  if (secret !== undefined) maskSecretInHeaders(headers, secret);
  withRequestId(headers, options.requestId, options.streamStyle === 'messages');
  // nginx (proxy_buffering, on by default) holds a proxied answer until its buffers fill or it
  // ends, unless the answer says otherwise: a stream, or speech a player starts on as it comes,
  // must reach a client behind it as it arrives. A whole JSON answer is left to buffer.
  if (isSse || isJsonArrayStream || sniffs || (upstream.status < 300 && contentType.startsWith('audio/'))) headers['x-accel-buffering'] = 'no';
  const relay = new RelayContext(reply, options, secret);
  // A successful SSE stream's status and headers go with its first bytes, or after HEAD_HOLD_MS
  // without them: one that fails before is answered with the gateway's HTTP error, which an SDK
  // raises as such (its stream helpers expect the protocol's first event, not an error event, first).
  const holdHead = isSse && reply.status < 400;
  // A sniffed answer's too, until its first bytes say whether its length still holds. A plain
  // body's go with its first bytes as well (node sends written headers only with them anyway):
  // one that fails before is answered with the gateway's error rather than a cut connection.
  relay.head(headers, holdHead || !(isSse || isJsonArrayStream));
  return new Promise((resolve) => {
    let usageWait: NodeJS.Timeout | undefined;
    const onClose = () => {
      if (res.writableFinished) return;
      relay.clientLeft();
      if (relay.usageRelay?.awaitsOnlyUsage() === true) usageWait = setTimeout(() => reply.abort(), USAGE_AFTER_CLIENT_LEFT_MS);
      else reply.abort();
    };
    const { onClientGone } = options;
    const settle = () => resolve(relay.outcome);
    const done = () => {
      clearTimeout(usageWait);
      relay.end();
      // The usual answer is in the kernel's hands once ended; one whose tail waits on a client
      // not reading is recorded only once the tail went out, the client left or stalled.
      if (res.writableLength > 0 && !res.destroyed) return awaitAnswerTail(relay, settle);
      onClientGone(undefined);
      settle();
    };
    onClientGone(onClose);
    reply.consume(
      isSse
        ? new SseRelay(relay, done)
        : isJsonArrayStream
          ? new JsonArrayRelay(relay, done)
          : decodedBeside
            ? new CompressedBodyRelay(relay, upstream.headers, done)
            : sniffs
              ? new SniffedStreamRelay((sse) => (sse ? sniffedSse(relay, headers, done) : new BodyRelay(relay, isJson, done)))
              : new BodyRelay(relay, isJson, done),
    );
    // node sends the headers with the first body bytes. A stream whose first bytes did not come
    // with them gets them now (a held one after its grace), as from the upstream, so that its
    // client's wait for a response ends and it sees the request id; a plain body keeps one write.
    if ((isSse || isJsonArrayStream) && !relay.started && !res.writableEnded) {
      if (holdHead) relay.releaseHeadAfter(HEAD_HOLD_MS);
      else relay.flushHead();
    }
  });
}

/**
 * The SSE relay for a stream its first bytes showed, its head still held: without the
 * upstream's length (an event may be dropped, an error event added), and given its first byte
 * or HEAD_HOLD_MS, as a declared stream is.
 */
function sniffedSse(relay: RelayContext, headers: OutgoingHeaders, done: () => void): SseRelay {
  delete headers['content-length'];
  relay.releaseHeadAfter(HEAD_HOLD_MS);
  return new SseRelay(relay, done);
}

/** Whether a lower-cased content type is audio, an image or video: bytes, never an event stream. */
function isMedia(contentType: string): boolean {
  return contentType.startsWith('audio/') || contentType.startsWith('image/') || contentType.startsWith('video/');
}
