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

/**
 * The most peers kept. A flood of failures from distinct addresses (an IPv6 prefix holds
 * billions) would otherwise keep one entry each (about 400 bytes) for the whole window: two
 * million within 30 minutes held 700 MB. Past it the peers whose last failures are oldest go,
 * an eighth of the table at once (a Map deleted from its front one entry per failure walks
 * the deleted slots each time), locked ones last: a locked peer records no failures, so its
 * entry drifts to the front, and a flood from other addresses is not to lift its lock.
 */
export const MAX_LOCKOUT_PEERS = 50_000;
const EVICTED_AT_ONCE = MAX_LOCKOUT_PEERS / 8;
/** Expired entries are looked for at most this often: a pass reads the whole table. */
const PRUNE_INTERVAL_MS = 60_000;

/** The lockout state table of spec section 3, kept per direct peer address in memory. */
export class Lockout {
  readonly #peers = new Map<string, PeerState>();
  readonly #clock: Clock;
  readonly #policy: LockoutPolicy;
  #prunedAt = -Infinity;

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
    // Either way: a clock set back must not stop pruning until it catches up.
    if (Math.abs(now - this.#prunedAt) >= PRUNE_INTERVAL_MS) this.#prune(now);
    const state = this.#peers.get(peer) ?? { failures: [], lockedUntil: 0 };
    state.failures = state.failures.filter((t) => now - t < this.#policy.windowMs);
    state.failures.push(now);
    if (state.failures.length >= this.#policy.maxFailures) {
      state.failures = [];
      state.lockedUntil = now + this.#policy.lockMs;
    }
    // Kept in the order of last failures, the order peers are evicted in.
    this.#peers.delete(peer);
    this.#peers.set(peer, state);
    if (this.#peers.size > MAX_LOCKOUT_PEERS) this.#evictOldest(now, peer);
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

  /** For diagnostics (tests of churn): how many peers are kept. */
  diagnosticSize(): number {
    return this.#peers.size;
  }

  /** Drops the entries whose window and lock have passed, so that addresses failing once and never again are forgotten. */
  #prune(now: number): void {
    this.#prunedAt = now;
    for (const [peer, state] of this.#peers) {
      if (state.lockedUntil <= now && state.failures.every((t) => now - t >= this.#policy.windowMs)) this.#peers.delete(peer);
    }
  }

  /** `failing`: the peer whose failure this is, never evicted by it (else, among locks alone, it could fail on without ever being locked). */
  #evictOldest(now: number, failing: string): void {
    let evicted = 0;
    for (const [peer, state] of this.#peers) {
      if (evicted === EVICTED_AT_ONCE) return;
      if (state.lockedUntil > now || peer === failing) continue;
      this.#peers.delete(peer);
      evicted++;
    }
    // Fewer unlocked peers than an eviction takes: the oldest locks go too, so that locks alone cannot grow the table.
    for (const peer of this.#peers.keys()) {
      if (evicted++ === EVICTED_AT_ONCE) return;
      this.#peers.delete(peer);
    }
  }
}
