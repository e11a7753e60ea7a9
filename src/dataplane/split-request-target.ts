import type { IncomingMessage } from 'node:http';

/**
 * The request target's path, and its query from its `?` when it has one. A `#fragment`, which
 * no request line should carry (RFC 9112 §3.2), is no part of either: never read, never forwarded.
 */
export function splitTarget(req: Pick<IncomingMessage, 'url'>): { path: string; search: string | undefined } {
  const url = req.url ?? '/';
  const hash = url.indexOf('#');
  const target = hash < 0 ? url : url.slice(0, hash);
  const q = target.indexOf('?');
  return q < 0 ? { path: target, search: undefined } : { path: target.slice(0, q), search: target.slice(q) };
}
