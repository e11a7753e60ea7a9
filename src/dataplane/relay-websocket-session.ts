import { WebSocket, type RawData } from 'ws';
import type { LogRecord } from '../store/logs/index.ts';
import type { SessionUsageAccumulator } from '../usage/index.ts';
import { ABNORMAL_CLOSURE, isErrorCloseCode, passedOnCloseCode } from './session-close-code.ts';
import { closeSessionSocket, MAX_CLOSE_REASON_BYTES } from './close-session-socket.ts';
import { maskSecretInText } from './mask-upstream-secret.ts';
import { HEARTBEAT_PAYLOAD, watchSessionClient, type ClientConnection } from './session-heartbeat.ts';
import { watchUpstreamIntake, type UpstreamIntake } from './session-upstream-intake.ts';
import type { SessionWebSocket } from './session-websocket.ts';

/**
 * A client socket joined to an upstream socket, frames passing both ways untouched (but for
 * `firstClientMessage`), pings and
 * pongs too (both sockets are opened without `autoPong`), so that either side's heartbeat
 * judges the other side itself, not the gateway. The upstream's text frames are shown to
 * `usage` (binary frames, audio, never are). The upstream's close reason has its `secret`
 * masked, as error answers do; frames are not scanned.
 */
export interface RelaySession {
  /**
   * Resolves when either side has closed and the upstream's socket is closed too (or destroyed
   * after the grace): everything the upstream sent, its last usage included, has been seen.
   */
  readonly ended: Promise<SessionEnd>;
  /** Resolves when both sockets are closed. */
  readonly closed: Promise<void>;
  /** Server shutdown: 1001 "going away" to both sides; what has not closed after a grace is destroyed. */
  goAway(): void;
  /** Ends the session on the gateway's own policy (a quota used up): 1008 with `reason` to both sides. */
  endForPolicy(reason: string): void;
  /**
   * Ends the session because what it was routed to was withdrawn (its credential or Group):
   * 1012 "Service Restart" with `reason` to the client, whose reconnect is routed afresh, and a
   * normal close to the upstream.
   */
  endWithdrawn(reason: string): void;
}

export interface SessionEnd {
  /** The code the upstream ended the session with when it is one that says the session failed (isErrorCloseCode). */
  upstreamErrorCode: number | undefined;
}

/** WebSocket close code 1008: the session broke the gateway's policy. */
const POLICY_VIOLATION = 1008;
/** WebSocket close code 1012 "Service Restart": nothing the client did; a new session may be opened. */
const SERVICE_RESTART = 1012;
const NORMAL_CLOSURE = 1000;

/**
 * Time a peer gets to answer the gateway's close frame before its socket is destroyed: both
 * peers on shutdown, the upstream when a session ends (its record waits for the upstream).
 */
const CLOSE_GRACE_MS = 1000;
const GOING_AWAY = 1001;
const OPEN_BRACE = 0x7b;
/** What ws reports for a message over its `maxPayload` (it has closed that side with 1009 "Message Too Big"). */
const WS_MESSAGE_TOO_BIG = 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';

/** Why the gateway ended a session it could not go on with: the record's error code, and the close reason the other side is told. */
interface Breakage {
  code: string;
  reason: string;
  /** The upstream is closed with this instead of the client's code. */
  toUpstream?: number;
}

/**
 * `clientConnection`: the client's raw socket, and `heartbeatMs`: the client's liveness period
 * (`watchSessionClient`); `upstreamIdleMs`: how long an upstream may take none of what waits
 * for it before it is taken as stalled (`watchUpstreamIntake`). `onUsage` runs after each upstream frame that carried usage (the
 * session's quota check). `firstClientMessage` may give the client's first message another
 * content (x-live's setup model, `withSetupModel`); undefined leaves it as sent.
 */
export function relayWebSocketSession(client: SessionWebSocket, clientConnection: ClientConnection, upstream: SessionWebSocket, log: LogRecord, usage: SessionUsageAccumulator | undefined, secret: string, heartbeatMs: number, upstreamIdleMs: number, onUsage?: () => void, firstClientMessage?: (message: Buffer) => Buffer | undefined): RelaySession {
  // A stalled upstream is ended as a dropped one is (1014 to the client, 1011 to it), recorded as an HTTP upstream gone silent is.
  const intake = watchUpstreamIntake(upstream, upstreamIdleMs, () => finish(ABNORMAL_CLOSURE, Buffer.alloc(0), false, { code: 'upstream_idle_timeout', reason: 'upstream not reading', toUpstream: 1011 }));
  client.on('message', relay(client, upstream, { mapFirst: firstClientMessage, toIntake: intake }));
  upstream.on('message', relay(upstream, client, { fromIntake: intake }));
  relayControlFrames(client, upstream);
  relayControlFrames(upstream, client);
  if (usage !== undefined) {
    upstream.on('message', (data, isBinary) => {
      // Usage sent while the upstream answers the close still counts; there is no session left to end for it.
      // Gemini Live sends its JSON messages in binary frames: one that opens a JSON object is read too, audio is not.
      if (Buffer.isBuffer(data) && (!isBinary || data[0] === OPEN_BRACE) && usage.push(data) && !done) onUsage?.();
    });
  }
  let goingAway = false;
  let grace: NodeJS.Timeout | undefined;
  let done = false;
  const end: SessionEnd = { upstreamErrorCode: undefined };
  let markEnded!: (end: SessionEnd) => void;
  const ended = new Promise<SessionEnd>((resolve) => (markEnded = resolve));
  const upstreamClosed = closedEvent(upstream);
  const finish = (code: number, reason: Buffer, byClient: boolean, broken?: Breakage) => {
    if (done) return;
    done = true;
    stopHeartbeat();
    intake.stop();
    // A client that sent a close frame, whatever its code, ended its session; one that dropped the connection left it.
    log.client_aborted = byClient && code === ABNORMAL_CLOSURE && !goingAway && broken === undefined;
    if (broken !== undefined) {
      log.error_code ??= broken.code;
      reason = Buffer.from(broken.reason);
    }
    // The session ran (101) until the server stopped it: the record says so, as a stream's does.
    else if (goingAway) log.error_code ??= 'shutting_down';
    else if (!byClient && code === ABNORMAL_CLOSURE) log.error_code ??= 'upstream_stream_broken';
    // The upstream said its session failed (its quota used up mid-session, an internal error): no success, though it ran.
    else if (!byClient && isErrorCloseCode(code)) {
      log.error_code ??= 'upstream_session_error';
      end.upstreamErrorCode = code;
    }
    const closeCode = passedOnCloseCode(code, byClient);
    for (const ws of [client, upstream]) if (ws.readyState === WebSocket.OPEN) closeSessionSocket(ws, ws === upstream ? (broken?.toUpstream ?? closeCode) : closeCode, reason);
    // Holding a side back served its peer, which is closing now: each side is read to its close
    // frame (the upstream's usage counted, nothing relayed), the upstream for at most the grace.
    for (const ws of [client, upstream]) ws.resume();
    if (upstream.readyState !== WebSocket.CLOSED) {
      const destroy = setTimeout(() => upstream.terminate(), CLOSE_GRACE_MS);
      void upstreamClosed.then(() => clearTimeout(destroy));
    }
    void upstreamClosed.then(() => markEnded(end));
  };
  const closed = Promise.all([closedEvent(client), upstreamClosed]).then(() => clearTimeout(grace));
  client.on('close', (code, reason) => finish(code, reason, true));
  upstream.on('close', (code, reason) => finish(code, maskedReason(reason, secret), false));
  // A side's close frame ends the session as it is read, though its answer may wait behind frames its peer does not read.
  // On shutdown the sides close on the gateway's 1001, as they always did.
  client.on('peer-close', (code: number, reason: Buffer) => goingAway || finish(code, reason, true));
  upstream.on('peer-close', (code: number, reason: Buffer) => goingAway || finish(code, maskedReason(reason, secret), false));
  // A side that broke the protocol sent no close frame (ws closes it): an abnormal end, as a dropped connection.
  // One whose message was over the cap (ws closed it with 1009) broke nothing: the gateway could not relay it.
  const tooBig = (error: Error, side: string): Breakage | undefined =>
    (error as NodeJS.ErrnoException).code === WS_MESSAGE_TOO_BIG ? { code: `${side}_message_too_big`, reason: `${side} message too big` } : undefined;
  client.on('error', (error) => finish(ABNORMAL_CLOSURE, Buffer.alloc(0), true, tooBig(error, 'client')));
  upstream.on('error', (error) => finish(ABNORMAL_CLOSURE, Buffer.alloc(0), false, tooBig(error, 'upstream')));
  // A client without progress through two heartbeat periods is gone: the upstream is told 1011, as for a dropped connection, and the client is cut.
  const stopHeartbeat = watchSessionClient(client, clientConnection, heartbeatMs, () => {
    finish(ABNORMAL_CLOSURE, Buffer.alloc(0), true, { code: 'client_stalled', reason: 'client not answering' });
    client.terminate();
  });
  // The upstream may have closed while the client's side was being joined.
  if (upstream.readyState === WebSocket.CLOSED) finish(1000, Buffer.alloc(0), false);
  upstream.resume();
  return {
    ended,
    closed,
    endForPolicy(reason) {
      // The gateway's own end, not the upstream's: its 1008 says nothing against the upstream.
      finish(POLICY_VIOLATION, Buffer.alloc(0), false, { code: reason, reason });
    },
    endWithdrawn(reason) {
      finish(SERVICE_RESTART, Buffer.alloc(0), false, { code: reason, reason, toUpstream: NORMAL_CLOSURE });
    },
    goAway() {
      if (goingAway) return;
      goingAway = true;
      intake.stop();
      for (const ws of [client, upstream]) if (ws.readyState === WebSocket.OPEN) closeSessionSocket(ws, GOING_AWAY, 'going away');
      // As in finish: a side held back is read to its close frame (the upstream's usage counted, nothing relayed).
      for (const ws of [client, upstream]) ws.resume();
      grace = setTimeout(() => {
        client.terminate();
        upstream.terminate();
      }, CLOSE_GRACE_MS);
    },
  };
}

/**
 * Frames from one side to the other. A side that reads slower than the other sends is held
 * back (its peer's socket paused) once this much waits to be written to it, so that the
 * gateway does not buffer a session's output without bound for a client that stopped reading.
 * The upstream's intake watch is told of writes to it (`toIntake`) and of its being held back (`fromIntake`).
 */
const HIGH_WATER_BYTES = 1024 * 1024;

function relay(from: WebSocket, to: WebSocket, o: { mapFirst?: (message: Buffer) => Buffer | undefined; toIntake?: UpstreamIntake; fromIntake?: UpstreamIntake }) {
  const { mapFirst, toIntake, fromIntake } = o;
  const written = () => {
    toIntake?.written();
    if (from.isPaused && to.bufferedAmount <= HIGH_WATER_BYTES) {
      from.resume();
      fromIntake?.letGo();
    }
  };
  let first = true;
  return (data: RawData, isBinary: boolean) => {
    if (to.readyState !== WebSocket.OPEN) return;
    if (first && mapFirst !== undefined && Buffer.isBuffer(data)) data = mapFirst(data) ?? data;
    first = false;
    to.send(data, { binary: isBinary }, written);
    toIntake?.sent();
    if (to.bufferedAmount > HIGH_WATER_BYTES && !from.isPaused) {
      from.pause();
      fromIntake?.heldBack();
    }
  };
}

/**
 * Pings and pongs from one side to the other, as they came, so that a heartbeat reaches the
 * peer that answers it. The client's pong to the gateway's own ping stays here.
 */
function relayControlFrames(from: WebSocket, to: WebSocket) {
  from.on('ping', (data) => {
    if (to.readyState === WebSocket.OPEN) to.ping(data);
  });
  from.on('pong', (data) => {
    if (to.readyState === WebSocket.OPEN && !data.equals(HEARTBEAT_PAYLOAD)) to.pong(data);
  });
}

/**
 * The close reason with the secret masked in any form it is echoed in (maskSecretInText checks
 * each), cut to MAX_CLOSE_REASON_BYTES at a character's end: a short secret's mask is longer
 * than the secret, and ws refuses a longer reason.
 */
function maskedReason(reason: Buffer, secret: string): Buffer {
  if (reason.length === 0) return reason;
  const text = reason.toString();
  const masked = maskSecretInText(text, secret);
  if (masked === text) return reason;
  const bytes = Buffer.from(masked);
  if (bytes.length <= MAX_CLOSE_REASON_BYTES) return bytes;
  // A cut inside a word can leave a short secret's form there as a whole token (masked only as one): the cut moves back past it.
  for (let end = characterEnd(bytes, MAX_CLOSE_REASON_BYTES); ; end = characterEnd(bytes, end - 1)) {
    const cut = bytes.subarray(0, end);
    if (end === 0 || maskSecretInText(cut.toString(), secret) === cut.toString()) return cut;
  }
}

/** The largest length up to `limit` at which `bytes` (UTF-8) ends on a whole character. */
function characterEnd(bytes: Buffer, limit: number): number {
  let end = limit;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return end;
}

function closedEvent(ws: WebSocket): Promise<void> {
  return ws.readyState === WebSocket.CLOSED ? Promise.resolve() : new Promise((resolve) => ws.once('close', () => resolve()));
}
