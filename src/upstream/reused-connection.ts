import type { buildConnector } from 'undici';

/**
 * Errors that ended an upstream connection which had carried earlier answers and read nothing
 * since its last request went out. undici writes a request only once the answer before it has
 * been read (no pipelining), so a request that failed on such a connection before any byte of
 * its own answer came is a pooled keep-alive connection the upstream closed as the request
 * crossed its idle timeout, when it failed soon after it was written (STALE_CONNECTION_WINDOW_MS
 * in classify-upstream-error.ts). Bytes read after the request was written are its own answer
 * begun (a head cut off), which says that the upstream took it, on a fresh connection or a
 * reused one alike. undici's own SocketError carries `bytesRead`, but counted from the socket's
 * start (a tunnel's too) and only on its own errors, not on a reset (ECONNRESET) or a broken
 * pipe (EPIPE), which is why the connection is watched here.
 */
const endedAfterReads = new WeakSet<object>();

/**
 * Wraps a connector so that the error ending each of its connections says whether the
 * connection was idle after earlier answers (see endedAfterReads). Two listeners per
 * connection, none per request: each read notes how much the connection had written by then.
 */
export function watchReuse(connector: buildConnector.connector): buildConnector.connector {
  return (options, callback) =>
    connector(options, (...args) => {
      // undici's own connector calls back with the error alone when it fails.
      if (args[0] === null) {
        const socket = args[1];
        const readAtStart = socket.bytesRead;
        let read = readAtStart;
        let writtenAtRead = socket.bytesWritten;
        // Only new bytes move the mark: the end of the stream (an upstream's FIN) reads none.
        socket.on('readable', () => {
          if (socket.bytesRead === read) return;
          read = socket.bytesRead;
          writtenAtRead = socket.bytesWritten;
        });
        socket.on('error', (cause: unknown) => {
          const idleSinceAnswer = read > readAtStart && socket.bytesRead === read && socket.bytesWritten > writtenAtRead;
          if (typeof cause === 'object' && cause !== null && idleSinceAnswer) endedAfterReads.add(cause);
        });
      }
      callback(...args);
    });
}

/** The error ended a watched connection idle after earlier answers when its request went out (see endedAfterReads). */
export function endedReadConnection(error: unknown): boolean {
  return typeof error === 'object' && error !== null && endedAfterReads.has(error);
}
