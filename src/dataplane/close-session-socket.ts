import type { WebSocket } from 'ws';

/** The most bytes a close frame's reason may hold (RFC 6455 §5.5: 125 bytes of payload, 2 of them the code). */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * Closes `ws` with `code` and `reason`, and never throws: it runs in event listeners and timers,
 * where a throw would end the process. ws throws for a reason over MAX_CLOSE_REASON_BYTES or a
 * code it may not send, before anything is sent: the socket is closed without the reason then,
 * and cut when that fails too.
 */
export function closeSessionSocket(ws: WebSocket, code: number, reason?: string | Buffer): void {
  try {
    ws.close(code, reason);
    return;
  } catch {
    // Falls through to the plainer ends below.
  }
  try {
    ws.close(code);
  } catch {
    ws.terminate();
  }
}
