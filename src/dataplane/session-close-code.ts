/** What a side that closed without a status code reports (RFC 6455 §7.1.5): never sent on the wire. */
const NO_STATUS_CODE = 1005;
/** What a side whose connection dropped without a close frame reports: never sent on the wire. */
export const ABNORMAL_CLOSURE = 1006;

/**
 * The code each side is closed with when the other reported one that may not be sent (IANA
 * WebSocket close code registry). No status is a normal end: 1000. A dropped connection is not:
 * the client is told 1014 "bad gateway" (the upstream failed the gateway), the upstream 1011
 * "internal error" (the gateway cannot go on with the session).
 */
const STAND_IN: Readonly<Record<number, { toClient: number; toUpstream: number }>> = {
  [NO_STATUS_CODE]: { toClient: 1000, toUpstream: 1000 },
  [ABNORMAL_CLOSURE]: { toClient: 1014, toUpstream: 1011 },
};

/** The code the other side is closed with when one side of a relayed session closed with `code`; a code that was sent passes as sent. */
export function passedOnCloseCode(code: number, byClient: boolean): number {
  const standIn = STAND_IN[code];
  if (standIn !== undefined) return byClient ? standIn.toUpstream : standIn.toClient;
  return code >= 1000 && code < 5000 ? code : 1000;
}

/** WebSocket close code 1013 "Try Again Later": the upstream is overloaded, as a 503 says. */
export const TRY_AGAIN_LATER = 1013;

/**
 * The close codes by which an upstream says the session failed (RFC 6455 §7.4.1, IANA
 * registry): protocol error, unsupported or invalid data, policy violation, message too big,
 * extension required, internal error, try again later, bad gateway. 1000 and 1001 are normal
 * ends, as is 1012 "Service Restart" (a going away), and 1005 means no code. The 3000-3999
 * (registered) and 4000-4999 (private) codes are read as nothing: vendors end sessions that
 * did their job with them too.
 */
const ERROR_CLOSE_CODES: ReadonlySet<number> = new Set([1002, 1003, 1007, 1008, 1009, 1010, 1011, TRY_AGAIN_LATER, 1014]);

export function isErrorCloseCode(code: number): boolean {
  return ERROR_CLOSE_CODES.has(code);
}
