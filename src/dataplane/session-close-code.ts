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
