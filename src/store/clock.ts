/** Milliseconds since the epoch; injected so that lockout and expiry are testable without sleeping. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
