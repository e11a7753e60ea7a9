import { WebSocket } from 'ws';

/** What a close frame without a status code reports (RFC 6455 §7.1.5). */
const NO_STATUS_CODE = 1005;

/**
 * A session's socket that says when its peer's close frame has been read: `'peer-close'`
 * (code, reason). ws emits `'close'` only once the handshake is done, and its answering close
 * frame waits behind what is queued to a peer that stopped reading, so a session would otherwise
 * not end until ws's close timeout (30 seconds). ws answers a peer's close frame by calling
 * `close()`, as it also does for a frame that broke the protocol, right before its `'error'`:
 * the event is emitted a tick later, so that a side that broke the protocol is reported by its
 * `'error'` first. The gateway's own `close()` calls emit it too; a session ignores those.
 */
export class SessionWebSocket extends WebSocket {
  override close(code?: number, data?: string | Buffer): void {
    const open = this.readyState === WebSocket.OPEN;
    super.close(code, data);
    if (open) process.nextTick(() => this.emit('peer-close', code ?? NO_STATUS_CODE, Buffer.from(data ?? '')));
  }
}
