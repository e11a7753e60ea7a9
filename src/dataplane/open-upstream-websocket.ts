import type { Agent, ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { classifyUpstreamError, DEFAULT_CONNECT_TIMEOUT_MS, failedAtGateway, neverConnected, type GatewaySideKind, type HeaderMap, type OutgoingHeaders } from '../upstream/index.ts';
import { SessionWebSocket } from './session-websocket.ts';

/** How an upstream answered the opening handshake. */
export type HandshakeOutcome =
  /** `headers`: those of the upstream's 101. */
  | { kind: 'open'; socket: SessionWebSocket; headers: HeaderMap }
  | { kind: 'answered'; status: number; headers: HeaderMap; body: Buffer }
  /** The upstream completed the handshake selecting none of the subprotocols offered, which `ws` refuses. */
  | { kind: 'no_subprotocol' }
  /**
   * The upstream answered 101 with a handshake `ws` refuses otherwise (a wrong
   * `Sec-WebSocket-Accept`, a subprotocol or extension not offered): `detail`, ws's reason.
   */
  | { kind: 'invalid_handshake'; detail: string }
  /**
   * `timedOut`: the upstream was connected to and has not answered in time (overdue);
   * `notDelivered`: the upgrade request provably never reached the upstream (no connection was
   * made); `gatewaySide`: the gateway's proxy failed, not the credential; `certificateRefused`:
   * the upstream's certificate was refused, no credential's fault either; `neverConnected`: the
   * connection to the upstream's address never opened (see neverConnected), a refused certificate too.
   */
  | { kind: 'failed'; timedOut: boolean; code: string; notDelivered: boolean; gatewaySide?: GatewaySideKind; certificateRefused?: boolean; neverConnected?: true };

export interface UpstreamHandshake {
  outcome: Promise<HandshakeOutcome>;
  /** Calls the handshake off (server shutdown, the client left); the outcome becomes a failure, or the answer so far once the upstream answered. */
  abort(): void;
}

/** A non-101 answer's body is kept up to this much, to pass on to the client. */
const ANSWER_BODY_LIMIT = 1024 * 1024;
/** ws reports its own handshake timeout only by this message. */
const WS_HANDSHAKE_TIMEOUT = 'Opening handshake has timed out';
const WS_NO_SUBPROTOCOL = 'Server sent no subprotocol';

const CONNECT_TIMED_OUT: HandshakeOutcome = { kind: 'failed', timedOut: false, code: 'upstream_connect_timeout', notDelivered: true, neverConnected: true };

/**
 * Opens the upstream WebSocket offering the client's `protocols`; the opened socket's `protocol`
 * is the one the upstream selected. An opened socket is paused, so frames the upstream sends
 * before the client's side is joined wait in the socket instead of being dropped. It does not
 * answer pings itself: the session relays them to the client. `maxPayload`: the largest message
 * it accepts (the data plane's `sessionMessageMaxBytes`).
 */
export function openUpstreamWebSocket(
  url: string,
  protocols: string[],
  headers: OutgoingHeaders,
  options: { agent: Agent | undefined; handshakeTimeoutMs: number; answerIdleTimeoutMs: number; connectTimeoutMs?: number; maxPayload: number },
): UpstreamHandshake {
  // ws times the handshake from before the connection opens: how far it got says whose the timeout is.
  let socketGiven = false;
  let connected = false;
  let connectTimer: NodeJS.Timeout | undefined;
  const onConnected = () => {
    connected = true;
    clearTimeout(connectTimer);
  };
  const finishRequest = (req: ClientRequest) => {
    req.once('socket', (socket: Socket) => {
      socketGiven = true;
      if (socket instanceof TLSSocket) socket.once('secureConnect', onConnected);
      else if (socket.connecting) socket.once('connect', onConnected);
      else onConnected();
    });
    req.end();
  };
  const ws = new SessionWebSocket(url, protocols, {
    headers,
    handshakeTimeout: options.handshakeTimeoutMs,
    finishRequest,
    autoPong: false,
    maxPayload: options.maxPayload,
    ...(options.agent ? { agent: options.agent } : {}),
  });
  const outcome = new Promise<HandshakeOutcome>((resolve) => {
    // Directly, the connect timeout the HTTP path has; through a proxy, the tunnel's own.
    if (options.agent === undefined) {
      connectTimer = setTimeout(() => {
        resolve(CONNECT_TIMED_OUT);
        ws.terminate();
      }, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
      ws.once('close', () => clearTimeout(connectTimer));
    }
    // 'upgrade' comes with the 101, before 'open'.
    let switching: HeaderMap | undefined;
    ws.once('upgrade', (res) => (switching = res.headers));
    ws.once('open', () => {
      ws.pause();
      resolve({ kind: 'open', socket: ws, headers: switching ?? {} });
    });
    // Set once the upstream answered: from then on the outcome is that answer, whatever ends its body.
    let answered = false;
    ws.once('unexpected-response', (_req, res) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      // A body that goes silent is cut, so that the status decides (failover, the credential's verdict) without waiting out the handshake timeout.
      const silence = setTimeout(() => res.destroy(), options.answerIdleTimeoutMs);
      res.on('error', () => {});
      res.on('data', (chunk: Buffer) => {
        silence.refresh();
        chunks.push(chunk);
        size += chunk.length;
        if (size >= ANSWER_BODY_LIMIT) res.destroy();
      });
      res.once('close', () => {
        clearTimeout(silence);
        ws.terminate();
        resolve({ kind: 'answered', status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks).subarray(0, ANSWER_BODY_LIMIT) });
      });
    });
    // Kept for the socket's life: errors after the outcome (a terminated handshake) are expected.
    ws.on('error', (error) => {
      if (answered) return;
      // After the 101 only ws's checks of it fail (until 'open', which comes at once if none does): the upstream answered, its connection is fine.
      if (switching !== undefined) return resolve(error.message === WS_NO_SUBPROTOCOL ? { kind: 'no_subprotocol' } : { kind: 'invalid_handshake', detail: error.message });
      if (error.message === WS_HANDSHAKE_TIMEOUT) return resolve(handshakeTimedOut(connected, socketGiven || options.agent === undefined));
      // The agent is there only for a managed proxy: a connection that failed may be the proxy's.
      const failure = classifyUpstreamError(error, { viaProxy: options.agent !== undefined });
      resolve({
        kind: 'failed',
        timedOut: false,
        code: failure.code,
        notDelivered: failure.notDelivered,
        ...(failedAtGateway(failure) ? { gatewaySide: failure.kind } : {}),
        ...(failure.certificateRefused ? { certificateRefused: true } : {}),
        ...(neverConnected(failure) ? { neverConnected: true as const } : {}),
      });
    });
  });
  return { outcome, abort: () => ws.terminate() };
}

/**
 * ws's handshake timeout by how far the handshake got: connected, the upgrade request went out
 * and the answer is overdue; before that nothing was sent: a connect timeout (the upstream's,
 * cooled down as on the HTTP path), or, through a proxy that has not opened the tunnel yet
 * (`tunnelOpen` false; always true directly), the proxy's.
 */
function handshakeTimedOut(connected: boolean, tunnelOpen: boolean): HandshakeOutcome {
  if (connected) return { kind: 'failed', timedOut: true, code: 'upstream_timeout', notDelivered: false };
  if (!tunnelOpen) return { kind: 'failed', timedOut: false, code: 'proxy_unreachable', notDelivered: true, gatewaySide: 'proxy_unreachable' };
  return CONNECT_TIMED_OUT;
}
