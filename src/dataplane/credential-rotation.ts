import type { CredentialView } from '../store/records.ts';

/**
 * A Group's servable credentials (active, of a kind its channel takes and this version serves)
 * as they stand from `builtAt` until `validUntil`, and what a refusal says of the others: built
 * in one pass over the Group's credentials, and kept while it holds, so that neither a
 * request's pick nor a refusal's retry hint scans the Group. A configuration change gives a new
 * credentials array, hence a new index.
 */
export interface ServableIndex {
  readonly channel: string;
  readonly builtAt: number;
  /**
   * The earliest end of a cooldown among enabled credentials of a served kind (Infinity for
   * none): the servable ones change then, and until then it is the first recovery a retry hint names.
   */
  readonly validUntil: number;
  /** Whether a credential is disabled. */
  readonly anyDisabled: boolean;
  /** The latest end of a cooldown among enabled credentials (any kind): one is cooling at `t` while `t` is before it. */
  readonly coolingUntil: number;
  /** From when an enabled credential of a kind that needs an authorization flow is active (Infinity for never). */
  readonly flowActiveFrom: number;
  readonly servable: readonly CredentialView[];
  /**
   * The round-robin's period: the count of servable credentials when their weights are equal,
   * else the sum of the weights, each credential owning `weight` consecutive positions.
   */
  readonly period: number;
  /** How far the position moves per pick: 1 (equal weights), else a step coprime with the period that spreads a heavy credential's turns. */
  readonly step: number;
  /** Mixed weights: the end of each credential's positions (cumulative weights); undefined for equal weights. */
  readonly ends: Float64Array | undefined;
  /** The turn for a Group of fewer than two: no round-robin, the same object every time. */
  readonly whole: CredentialTurn;
}

/**
 * The credentials a request tries, in order: the round-robin's pick first, then the others in
 * configuration order after it, wrapping round to the first. Read lazily (as `Array.prototype.at`), since a request takes at most
 * max_attempts_per_request of them: no list as long as the Group is made per request.
 */
export class CredentialTurn implements Iterable<CredentialView> {
  readonly #servable: readonly CredentialView[];
  readonly #start: number;

  constructor(servable: readonly CredentialView[], start: number) {
    this.#servable = servable;
    this.#start = start;
  }

  get length(): number {
    return this.#servable.length;
  }

  /** The `i`th to try; a negative `i` counts from the last. */
  at(i: number): CredentialView | undefined {
    const n = this.#servable.length;
    const k = i < 0 ? i + n : i;
    if (k < 0 || k >= n) return undefined;
    const j = this.#start + k;
    return this.#servable[j < n ? j : j - n];
  }

  *[Symbol.iterator](): Iterator<CredentialView> {
    for (let i = 0; i < this.#servable.length; i++) yield this.at(i)!;
  }
}

/**
 * One pass over a Group's credentials: `cooldown_until` is parsed once per build rather than
 * once per request (none, or one that cannot be read or has ended, counts as active, as
 * credentialStateAt has it). The refusal's summary is kept as times, so it holds at any `now`.
 */
export function buildServableIndex(
  credentials: readonly CredentialView[],
  channel: string,
  serves: (kind: string) => boolean,
  needsFlow: (kind: string) => boolean,
  now: number,
): ServableIndex {
  const servable: CredentialView[] = [];
  let validUntil = Infinity;
  let anyDisabled = false;
  let coolingUntil = -Infinity;
  let flowActiveFrom = Infinity;
  let equal = true;
  for (const c of credentials) {
    if (!c.enabled) {
      anyDisabled = true;
      continue;
    }
    const until = c.cooldown_until === null ? NaN : Date.parse(c.cooldown_until);
    if (until > coolingUntil) coolingUntil = until;
    // A kind not served never becomes servable: its cooldown's end changes nothing here.
    if (!serves(c.kind)) {
      if (needsFlow(c.kind)) flowActiveFrom = Math.min(flowActiveFrom, until > -Infinity ? until : -Infinity);
      continue;
    }
    if (until > now) {
      if (until < validUntil) validUntil = until;
      continue;
    }
    if (servable.length > 0 && weightOf(c) !== weightOf(servable[0]!)) equal = false;
    servable.push(c);
  }
  const whole = new CredentialTurn(servable, 0);
  const summary = { channel, builtAt: now, validUntil, anyDisabled, coolingUntil, flowActiveFrom, servable, whole };
  if (equal) return { ...summary, period: servable.length, step: 1, ends: undefined };
  const ends = new Float64Array(servable.length);
  let total = 0;
  for (let i = 0; i < servable.length; i++) ends[i] = total += weightOf(servable[i]!);
  return { ...summary, period: total, step: spreadingStep(total), ends };
}

/** The index of the credential owning `position` (0 <= position < period). */
export function ownerOf(index: ServableIndex, position: number): number {
  const ends = index.ends;
  if (ends === undefined) return position;
  let lo = 0;
  let hi = ends.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ends[mid]! > position) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Weights are integers of 1 to 1000 (the management schemas); anything else stored counts as the nearest. */
function weightOf(c: CredentialView): number {
  return Math.max(Math.round(c.weight ?? 1), 1);
}

/**
 * A step coprime with `period` near period/φ: the positions visited (0, step, 2·step, ... mod
 * period) are every position once per period, so each credential gets exactly its weight's
 * share of every period, and a heavy credential's positions (consecutive) are reached spread
 * over it rather than back to back (weights 5, 1, 1 give a a a b a c a).
 */
function spreadingStep(period: number): number {
  const near = Math.max(1, Math.round(period * 0.6180339887498949));
  for (let d = 0; d < period; d++) {
    for (const s of [near + d, near - d]) if (s >= 1 && s < period && gcd(s, period) === 1) return s;
  }
  return 1;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
