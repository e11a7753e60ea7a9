import type { IncomingMessage, ServerResponse } from 'node:http';

/** After an answer given mid-upload, at most this much more of the body is read (the default `maxBodyBytes`). */
export const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * Whether a request still has body bytes to come: it declared a body (a length above 0, or
 * chunked framing) and node has not seen all of it. A refusal answered then reads and
 * discards the rest (see drainAfterAnswer), since the server sets no whole-request deadline.
 * `complete` alone is not enough: it is false for any request while its handler first runs.
 */
export function bodyOutstanding(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * For an answer given while its request's body still uploads (called as it is given): the rest
 * of the body is read and discarded, as node does with a body nobody reads
 * (IncomingMessage._dump) and nginx's lingering close does, so that the client, still writing,
 * reads the answer instead of a reset (a socket closed with unread bytes sends RST). Counted
 * from now and bounded once the answer is sent: past LINGER_BYTES the connection is destroyed.
 * A body that stops coming is cut by node's keep-alive timeout, which node arms as the answer
 * ends (the connection is idle to it). One that ends within the bound leaves the connection
 * open and node's parser at the next request.
 */
export function drainAfterAnswer(res: ServerResponse): void {
  const req = res.req;
  let left = LINGER_BYTES;
  let answered = false;
  const cut = () => {
    stop();
    req.socket.destroy();
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
    // Whatever read the body before (a spool file, the upstream) is done with it.
    req.unpipe();
    req.resume();
  };
  const stop = () => {
    req.off('data', onData).off('end', stop).off('close', stop);
    res.off('finish', onAnswered);
  };
  req.on('data', onData).once('end', stop).once('close', stop);
  res.once('finish', onAnswered);
}
