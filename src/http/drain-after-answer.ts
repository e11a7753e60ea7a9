import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { bodyOutstanding } from './body-outstanding.ts';
import { continueAwaited } from './expect-continue.ts';

/** After an answer given mid-upload, at most this much more of the body is read. */
export const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * After an answer given mid-upload, at most this long (from the answer's end) is given to the
 * rest of the body, as nginx's `lingering_time`: node's keep-alive timeout is an idle timer that
 * every byte restarts, so a body trickling in would otherwise hold the connection for ever.
 */
export const LINGER_MS = 30_000;

/**
 * After an answer that ends its connection while the body still uploads, this long (from the
 * answer's end) the connection lingers half-closed, what still arrives read and discarded, as
 * nginx's `lingering_timeout`.
 */
export const LINGER_CLOSE_MS = 5_000;

/**
 * LINGER_CLOSE_MS once a shutdown has begun: long enough for a client to read its answer and
 * stop writing (what avoids the reset), short enough not to hold the shutdown up.
 */
export const SHUTDOWN_LINGER_MS = 1_000;

/** Connections whose answer has been sent and which only read the rest of its request's body. */
const draining = new WeakSet<Socket>();

/**
 * Connections whose last answer (`connection: close`) has been sent and which only discard what
 * still arrives, each with what re-arms its deadline.
 */
const lingering = new WeakMap<Socket, (ms: number) => void>();

/** Connections of a server whose shutdown has begun (per socket, so that servers in one process stay apart). */
const shuttingDown = new WeakSet<Socket>();

/**
 * Whether this connection's answer has been sent and it only reads and discards the rest of the
 * body (see drainAfterAnswer and lingerOnClose): a shutdown cuts it short (see lingerBriefly),
 * as node's parser, mid-body, does not count it idle.
 */
export function drainingAfterAnswer(socket: Socket): boolean {
  return draining.has(socket) || lingering.has(socket);
}

/**
 * For a connection of a server whose shutdown has begun: from now on it lingers at most
 * SHUTDOWN_LINGER_MS (see lingerOnClose), and one that already lingers or drains the body after
 * its answer is half-closed and lingers that long from now, rather than destroyed at once: a
 * socket closed on bytes still coming sends RST, which can reach a client before its answer.
 */
export function lingerBriefly(socket: Socket): void {
  shuttingDown.add(socket);
  const shorten = lingering.get(socket);
  if (shorten !== undefined) shorten(SHUTDOWN_LINGER_MS);
  // drainAfterAnswer has the body read already, and still ends the connection past its bounds.
  else if (draining.has(socket)) linger(socket, SHUTDOWN_LINGER_MS);
}

/**
 * Whether this connection's last answer has been sent (see lingerOnClose): a request node's
 * parser still finds on it, sent after `connection: close`, is not to be served.
 */
export function closedAfterAnswer(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * The rule of both planes for an answer (called as it is given, before its headers are
 * written): a request whose body still uploads has the rest drained (see drainAfterAnswer), or,
 * when that is refused or the client still waits for `100 Continue` (it sends no body then),
 * the answer must say `connection: close` and the connection lingers (see lingerOnClose).
 * Returns whether it must.
 */
export function closeUnlessDrained(res: ServerResponse): boolean {
  if (!bodyOutstanding(res.req)) return false;
  // One that ends after this answer anyway (a shutdown, the client's own `connection: close`)
  // lingers: node would end it on the body's unread bytes as soon as the answer is sent.
  if (res.shouldKeepAlive && !continueAwaited(res.req) && drainAfterAnswer(res)) return false;
  lingerOnClose(res);
  return true;
}

/**
 * For an answer that ends its connection while the body still uploads: node ends it once the
 * answer is sent, and a socket closed with unread bytes sends RST, which can reach a client
 * still writing before it read the answer (an SDK then reports a connection error, not the
 * 413). As nginx's lingering close, the connection is half-closed instead, and what still
 * arrives is read and discarded until the client closes or LINGER_CLOSE_MS has passed
 * (SHUTDOWN_LINGER_MS once a shutdown has begun): bounded by time, not bytes, as the body was
 * too large to drain or the connection ends anyway.
 */
function lingerOnClose(res: ServerResponse): void {
  const req = res.req;
  const socket = req.socket;
  // What node calls once the last answer is written (end, then destroy once it is flushed).
  socket.destroySoon = () => {
    // Whatever read the body before (a spool file, the upstream) is done with it.
    req.unpipe();
    req.resume();
    linger(socket, shuttingDown.has(socket) ? SHUTDOWN_LINGER_MS : LINGER_CLOSE_MS);
  };
}

/** Half-closes a connection whose body is being read and discarded, and destroys it after `ms` unless the client closes first. */
function linger(socket: Socket, ms: number): void {
  socket.end();
  let at = Date.now() + ms;
  let deadline = setTimeout(() => socket.destroy(), ms).unref();
  // Only ever brought forward: a shutdown does not lengthen what is left.
  lingering.set(socket, (shorter) => {
    if (Date.now() + shorter >= at) return;
    at = Date.now() + shorter;
    clearTimeout(deadline);
    deadline = setTimeout(() => socket.destroy(), shorter).unref();
  });
  socket.once('close', () => clearTimeout(deadline));
}

/**
 * For an answer given while its request's body still uploads (called as it is given, before its
 * headers are written): the rest of the body is read and discarded, as node does with a body
 * nobody reads (IncomingMessage._dump) and nginx's lingering close does, so that the client,
 * still writing, reads the answer instead of a reset (a socket closed with unread bytes sends
 * RST). Counted from now and bounded once the answer is sent: past LINGER_BYTES, or LINGER_MS
 * after the answer's end, the connection is destroyed. A body that ends within both leaves the
 * connection open and node's parser at the next request.
 * Returns false, and drains nothing, when the declared length is more than LINGER_BYTES beyond
 * what the connection has read so far (an upper bound of what arrived of the body): the rest
 * would be read for nothing. The answer must then say `connection: close` (see closeUnlessDrained).
 */
function drainAfterAnswer(res: ServerResponse): boolean {
  const req = res.req;
  const socket = req.socket;
  const length = req.headers['content-length'];
  // A chunked body declares no length: it is drained, within the same bounds, whatever its size.
  if (length !== undefined && Number(length) - socket.bytesRead > LINGER_BYTES) return false;
  let left = LINGER_BYTES;
  let answered = false;
  let deadline: NodeJS.Timeout | undefined;
  const cut = () => {
    stop();
    socket.destroy();
  };
  // Counted as a reader still takes the body (an upstream answering early): a body being read
  // is not dumped unseen by node once the answer ends.
  const onData = (chunk: Buffer) => {
    left -= chunk.length;
    if (answered && left < 0) cut();
  };
  const onAnswered = () => {
    answered = true;
    if (left < 0) return cut();
    draining.add(socket);
    // The one timer of a mid-upload answer; the usual answer has none.
    deadline = setTimeout(cut, LINGER_MS).unref();
    // Whatever read the body before (a spool file, the upstream) is done with it.
    req.unpipe();
    req.resume();
  };
  const stop = () => {
    clearTimeout(deadline);
    draining.delete(socket);
    req.off('data', onData).off('end', stop).off('close', stop);
    res.off('finish', onAnswered);
  };
  req.on('data', onData).once('end', stop).once('close', stop);
  res.once('finish', onAnswered);
  return true;
}
