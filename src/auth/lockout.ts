import type { Clock } from '../store/clock.ts';

export interface LockoutPolicy {
  maxFailures: number;
  windowMs: number;
  lockMs: number;
}

/** Spec section 8: five failures within 30 minutes lock the peer for 30 minutes. */
export const DEFAULT_LOCKOUT_POLICY: LockoutPolicy = { maxFailures: 5, windowMs: 30 * 60_000, lockMs: 30 * 60_000 };

export type LockStatus = { locked: false } | { locked: true; retryAfterSeconds: number };

interface PeerState {
  failures: number[];
  lockedUntil: number;
}

const PRUNE_EVERY = 1024;

/** The lockout state table of spec section 3, kept per direct peer address in memory. */
export class Lockout {
  readonly #peers = new Map<string, PeerState>();
  readonly #clock: Clock;
  readonly #policy: LockoutPolicy;
  #calls = 0;

  constructor(clock: Clock, policy: LockoutPolicy = DEFAULT_LOCKOUT_POLICY) {
    this.#clock = clock;
    this.#policy = policy;
  }

  status(peer: string): LockStatus {
    const state = this.#peers.get(peer);
    const now = this.#clock();
    if (!state || state.lockedUntil <= now) return { locked: false };
    return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((state.lockedUntil - now) / 1000)) };
  }

  /** Records a failed authentication; returns the lock it caused, if this was the fifth. */
  recordFailure(peer: string): LockStatus {
    const now = this.#clock();
    this.#maybePrune(now);
    const state = this.#peers.get(peer) ?? { failures: [], lockedUntil: 0 };
    state.failures = state.failures.filter((t) => now - t < this.#policy.windowMs);
    state.failures.push(now);
    if (state.failures.length >= this.#policy.maxFailures) {
      state.failures = [];
      state.lockedUntil = now + this.#policy.lockMs;
    }
    this.#peers.set(peer, state);
    return this.status(peer);
  }

  /** A success with the AUTH_KEY clears the count (an AccessKey success does not). */
  clear(peer: string): void {
    const state = this.#peers.get(peer);
    if (state && state.lockedUntil <= this.#clock()) this.#peers.delete(peer);
  }

  failureCount(peer: string): number {
    const now = this.#clock();
    return (this.#peers.get(peer)?.failures ?? []).filter((t) => now - t < this.#policy.windowMs).length;
  }

  // Keeps memory bounded when many addresses fail once and never come back.
  #maybePrune(now: number): void {
    if (++this.#calls % PRUNE_EVERY !== 0) return;
    for (const [peer, state] of this.#peers) {
      if (state.lockedUntil <= now && state.failures.every((t) => now - t >= this.#policy.windowMs)) this.#peers.delete(peer);
    }
  }
}
