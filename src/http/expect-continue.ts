import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Data-plane requests whose client waits for `100 Continue` before it sends the body, each with
 * the answer that sends it. The 100 goes out only once the body is read (continueBody), so that
 * a request refused before (a bad key, an unknown path, a body declared too large, a quota) is
 * answered with none of its body sent; node would send it at once.
 */
const awaiting = new WeakMap<IncomingMessage, ServerResponse>();

/** For a request that says `Expect: 100-continue`: its 100 waits for continueBody. */
export function holdContinue(res: ServerResponse): void {
  awaiting.set(res.req, res);
}

/** Called where the body starts being read: a client waiting for the 100 is sent it. */
export function continueBody(req: IncomingMessage): void {
  const res = awaiting.get(req);
  if (res === undefined) return;
  awaiting.delete(req);
  res.writeContinue();
}

/**
 * Whether the request's client still waits for the 100: after a final answer it sends no body
 * (RFC 9110 §10.1.1), so there is none to drain; node closes the connection after such an
 * answer anyway, and it lingers (closeUnlessDrained) so that a client sending the body all the
 * same (curl does after a second) is not reset.
 */
export function continueAwaited(req: IncomingMessage): boolean {
  return awaiting.has(req);
}
