import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../http/api-error.ts';
import type { Clock } from '../store/clock.ts';
import type { IdempotencyStore } from '../store/config-store.ts';
import type { StoredResult } from '../store/records.ts';

export const IDEMPOTENCY_RESULT_TTL_MS = 7 * 24 * 3_600_000;
/** Expired records are kept (without their result) this long so that a late retry gets 410, not a second execution. */
export const IDEMPOTENCY_RECORD_TTL_MS = 90 * 24 * 3_600_000;
export const REPLAY_HEADER = 'Idempotency-Replayed';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PRUNE_INTERVAL_MS = 3_600_000;

/** The Idempotency-Key of a request: exactly one header value, a canonical lowercase UUID v4. */
export function readIdempotencyKey(req: IncomingMessage): string {
  const values = req.headersDistinct['idempotency-key'];
  if (values === undefined || values.length === 0) throw new ApiError('IDEMPOTENCY_KEY_REQUIRED');
  if (values.length > 1) throw new ApiError('INVALID_IDEMPOTENCY_KEY', { data: { reason: 'repeated' } });
  const value = values[0] as string;
  if (!UUID_V4.test(value)) throw new ApiError('INVALID_IDEMPOTENCY_KEY', { data: { reason: 'malformed' } });
  return value;
}

/** Same operation and same input give the same fingerprint; key order in the body does not matter. */
export function requestFingerprint(method: string, routePath: string, params: Record<string, string>, body: unknown): string {
  return createHash('sha256').update(canonicalJson([method, routePath, params, body ?? null])).digest('base64url');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The result sent now, and the one stored for replays (without a secret created now). */
export interface Execution {
  result: StoredResult;
  forReplay: StoredResult;
}

/**
 * Runs an operation at most once per Idempotency-Key. Requests with the same key are queued
 * behind each other in this process, so concurrent duplicates execute once and the later
 * ones replay; the stored result is durable before the first response leaves. Across a crash:
 * a pending record is written before the operation and each configuration write notes the key
 * atomically, so a retry either runs (nothing was applied) or is refused (applied, result lost).
 */
export class IdempotencyGuard {
  readonly #store: IdempotencyStore;
  readonly #clock: Clock;
  readonly #inFlight = new Map<string, Promise<unknown>>();
  #lastPrune = -Infinity;

  constructor(store: IdempotencyStore, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  async run(key: string, fingerprint: string, execute: () => Promise<Execution>): Promise<{ result: StoredResult; replayed: boolean }> {
    const previous = this.#inFlight.get(key) ?? Promise.resolve();
    const current = previous.then(() => this.#once(key, fingerprint, execute));
    const settled = current.catch(() => undefined);
    this.#inFlight.set(key, settled);
    try {
      return await current;
    } finally {
      if (this.#inFlight.get(key) === settled) this.#inFlight.delete(key);
    }
  }

  async #once(key: string, fingerprint: string, execute: () => Promise<Execution>): Promise<{ result: StoredResult; replayed: boolean }> {
    const now = this.#clock();
    const existing = await this.#store.get(key);
    if (existing) {
      if (existing.fingerprint !== fingerprint) throw new ApiError('IDEMPOTENCY_KEY_REUSED');
      if (existing.pending) await this.#refuseIfApplied(key, existing.created_at);
      else if (existing.result === null || now - existing.created_at >= IDEMPOTENCY_RESULT_TTL_MS) throw new ApiError('IDEMPOTENCY_RESULT_EXPIRED');
      else return { result: existing.result, replayed: true };
    }
    // Durable before the operation runs, so that after a crash a retry knows to look for its change.
    await this.#store.put({ key, fingerprint, created_at: now, result: null, pending: true });
    let executed: Execution;
    try {
      executed = await this.#store.noteChanges(key, execute);
    } catch (error) {
      await this.#dropPendingIfUnchanged(key);
      throw error;
    }
    const { result, forReplay } = executed;
    // A 5xx says nothing about what happened; the client may retry with the same key.
    if (result.status < 500) await this.#store.put({ key, fingerprint, created_at: now, result: forReplay });
    else await this.#dropPendingIfUnchanged(key);
    await this.#maybePrune(now);
    return { result, replayed: false };
  }

  /** A pending record outlived its attempt (a crash): if the change is in the configuration, running again would apply it twice. */
  async #refuseIfApplied(key: string, attemptedAt: number): Promise<void> {
    const appliedAt = await this.#store.changedAt(key);
    if (appliedAt === undefined) return;
    throw new ApiError('IDEMPOTENCY_OUTCOME_LOST', { data: { attempted_at: new Date(attemptedAt).toISOString(), applied_at: new Date(appliedAt).toISOString() } });
  }

  /** A failed attempt that wrote nothing leaves no trace; one that wrote keeps its pending record, so a retry is refused rather than run twice. */
  async #dropPendingIfUnchanged(key: string): Promise<void> {
    if ((await this.#store.changedAt(key)) !== undefined) return;
    // A pending record with no change behind it only makes the retry run, as it should.
    await this.#store.delete(key).catch(() => undefined);
  }

  async #maybePrune(now: number): Promise<void> {
    if (now - this.#lastPrune < PRUNE_INTERVAL_MS) return;
    this.#lastPrune = now;
    await this.#store.prune(now, IDEMPOTENCY_RESULT_TTL_MS, IDEMPOTENCY_RECORD_TTL_MS);
  }
}
