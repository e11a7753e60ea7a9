import type { IncomingMessage } from 'node:http';
import { DataPlaneError } from './data-plane-error.ts';

/** RFC 6455 §4.1: 16 random bytes in base64. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** RFC 7230 token characters, of which a subprotocol name is made. */
const TOKEN = /^[!#$%&'*+\-.0-9A-Z^_`|a-z~]+$/;

/**
 * Checks the client's opening handshake at least as strictly as the `ws` server that completes
 * it, so that a request it would refuse is refused before an upstream socket is opened with a
 * credential. Returns the subprotocols the client offers, in its order of preference.
 */
export function checkClientHandshake(req: IncomingMessage): string[] {
  if (req.method !== 'GET') throw new DataPlaneError('method_not_allowed', undefined, { allow: 'GET' });
  if (req.headers.upgrade?.toLowerCase() !== 'websocket') throw invalid('The Upgrade header must be "websocket".');
  const key = req.headers['sec-websocket-key'];
  if (key === undefined || !KEY.test(key)) throw invalid('Sec-WebSocket-Key must be 16 bytes in base64.');
  // RFC 6455 §4.4: a refused version is answered with the versions supported.
  if (req.headers['sec-websocket-version'] !== '13') throw new DataPlaneError('invalid_websocket_handshake', 'Sec-WebSocket-Version must be 13.', { 'sec-websocket-version': '13' });
  const header = req.headers['sec-websocket-protocol'];
  if (header === undefined) return [];
  const offered = header.split(',').map((p) => p.trim());
  if (!offered.every((p) => TOKEN.test(p)) || new Set(offered).size !== offered.length) throw invalid('Sec-WebSocket-Protocol must list distinct subprotocol names.');
  return offered;
}

function invalid(detail: string): DataPlaneError {
  return new DataPlaneError('invalid_websocket_handshake', detail);
}
