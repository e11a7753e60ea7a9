import type { buildConnector } from 'undici';

/**
 * Errors that ended an upstream connection which had read bytes since it was handed to undici
 * (a proxy's own CONNECT or SOCKS reply excluded). undici reads a connection only for answers,
 * so a request that failed on it before any answer of its own came on a connection that had
 * carried earlier ones: a pooled keep-alive connection the upstream closed as the request
 * crossed its idle timeout, when it failed soon after it was written (STALE_CONNECTION_WINDOW_MS
 * in classify-upstream-error.ts). undici's own SocketError carries `bytesRead`, but counted from the
 * socket's start (a tunnel's too) and only on its own errors, not on a reset (ECONNRESET) or a
 * broken pipe (EPIPE), which is why the connection is watched here.
 */
const endedAfterReads = new WeakSet<object>();

/**
 * Wraps a connector so that the error ending each of its connections says whether the
 * connection had read anything. One listener per connection, none per request.
 */
export function watchReuse(connector: buildConnector.connector): buildConnector.connector {
  return (options, callback) =>
    connector(options, (...args) => {
      // undici's own connector calls back with the error alone when it fails.
      if (args[0] === null) {
        const socket = args[1];
        const readAtStart = socket.bytesRead;
        socket.on('error', (cause: unknown) => {
          if (typeof cause === 'object' && cause !== null && socket.bytesRead > readAtStart) endedAfterReads.add(cause);
        });
      }
      callback(...args);
    });
}

/** The error ended a watched connection that had read bytes (see endedAfterReads). */
export function endedReadConnection(error: unknown): boolean {
  return typeof error === 'object' && error !== null && endedAfterReads.has(error);
}
