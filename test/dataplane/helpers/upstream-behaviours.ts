import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { startUpstream, type Upstream } from './data-plane-harness.ts';

/** How a substitute upstream answers one request. */
export type Behaviour = (res: ServerResponse) => void;

/** A success any protocol's client takes: 200 with a small JSON body. */
export const ok: Behaviour = (res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

/** An upstream error answer with `code`, its message naming the code so tests can tell whose answer arrived. */
export const status =
  (code: number, headers: Record<string, string> = {}): Behaviour =>
  (res) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message: `upstream says ${code}`, type: 'upstream_error' } }));
  };

/** The upstream secret a request carried, whichever header its protocol puts it in: which credential was tried. */
export function secretOf(req: { headers: IncomingMessage['headers'] }): string {
  return String(req.headers.authorization ?? req.headers['x-api-key'] ?? req.headers['x-goog-api-key'] ?? '').replace(/^Bearer /, '');
}

/** An upstream that answers by the secret it got (`ok` for any not listed), so each credential can fail its own way; stopped at the test's end. */
export async function upstreamBySecret(t: Test, behaviours: Record<string, Behaviour>): Promise<Upstream> {
  const upstream = await startUpstream((req, res) => (behaviours[secretOf(req)] ?? ok)(res));
  t.teardown(() => upstream.close());
  return upstream;
}

/** An upstream that answers every request `ok`, for tests about what happens before or around it; stopped at the test's end. */
export function okUpstream(t: Test): Promise<Upstream> {
  return upstreamBySecret(t, {});
}
