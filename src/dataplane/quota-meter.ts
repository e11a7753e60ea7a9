import type { OperationEntry } from '../generated/index.ts';
import { firstReachedLine, nextPeriodStart, nothingUsed, periodStart, quotaHasLimits, quotaLines, quotaReachedDetail, type QuotaLine, type QuotaStatus, type QuotaUsage } from '../management/quota.ts';
import type { LogReader, LogRecord } from '../store/log-store.ts';
import type { AccessKeyRecord, QuotaPeriod } from '../store/records.ts';
import { addCost } from '../usage/index.ts';
import { DataPlaneError } from './data-plane-error.ts';
import { NO_RETRY } from './retry-hints.ts';

interface Admission {
  keyId: number;
  at: number;
}

/**
 * A key's requests in flight, so that a check reads two numbers: their count toward the total
 * lines, and `period` toward the lines of the period starting at `periodStart` (admitted since
 * then; one admitted earlier has its record counted in the period it started in).
 */
interface InFlight {
  /** The requests themselves: their count is the total's, and a new period start recounts `period` from them (once per turn or edit, not per check). */
  readonly admissions: Set<Admission>;
  period: number;
  periodStart: number;
}

/** A WebSocket session running, by when it started. */
interface Session {
  startedAt: number;
}

interface Meter {
  /** The quota the totals were loaded for; another one (edited in the meantime) reloads. */
  quota: string;
  total: QuotaUsage;
  periodKind: QuotaPeriod | undefined;
  periodStart: number;
  period: QuotaUsage;
  /**
   * Usage of ended periods that sessions still running started in, by period start: a session's
   * per-period lines are judged in the period it started in, where its record will count.
   */
  earlier: Map<number, QuotaUsage>;
  /** Records that arrived while the totals were being read, added once they are in. */
  queued: LogRecord[] | undefined;
  loaded: Promise<void>;
}

/**
 * What each AccessKey with a quota has used, kept in memory: read from the log store the first
 * time the key is checked, then advanced by every log record the data plane appends. The
 * check before each request is then a lookup, not a query. Counts match `quotaStatus`
 * (requests that reached an upstream; tokens are input plus output). A request admitted by
 * `enforce` counts toward a requests limit until its record arrives, so that concurrent
 * requests cannot all pass the last free one; tokens and cost are only known at the end.
 * A quota that sets no limit (`{ total: {} }`) is no quota: nothing is read for it.
 */
export class QuotaMeter {
  readonly #logs: LogReader;
  readonly #meters = new Map<number, Meter>();
  /**
   * Requests admitted by `enforce` whose records have not arrived yet, per key: a request
   * admitted in a period that has since ended holds a place toward the total only, as its
   * record is counted in the period it started in. Kept beside the meters, not in them: a meter
   * rebuilt for an edited quota still counts the requests admitted under the old one, and each
   * releases its place once, whichever meter is current.
   */
  readonly #inFlight = new Map<number, InFlight>();
  /**
   * The WebSocket sessions running, per key (with a quota or not: one may be added while they
   * run), so that the usage of the period each started in is kept past its turn until they end.
   */
  readonly #sessions = new Map<number, Set<Session>>();
  /** The key each admitted request holds a place of, and when it was admitted, until its record arrives. */
  readonly #admitted = new WeakMap<LogRecord, Admission>();
  /**
   * The latest time any call or record has named. Meters are built and rolled at it, never at an
   * earlier time a caller passes (a request's start, checked again after its upload): a record
   * is seen here before it is appended, so none in the store lies past it (earlier runs' records
   * neither, unless the clock was set back across a restart), and a meter built at
   * it, reading its period up to the next one's start, sees every record a later period will
   * hold as it arrives. Moving into a later period then starts rightly from nothing, with no read.
   * It never moves back: a clock that jumps forward and is corrected within one run leaves the
   * meters built for the later period (its per-period counts started early) until real time
   * catches up with it.
   */
  #latest = -Infinity;

  constructor(logs: LogReader) {
    this.#logs = logs;
  }

  /**
   * Refuses a request of a key that has reached a limit (429 quota_exceeded), or whose usage
   * cannot be read from the log store (503 log_store_unavailable); otherwise admits
   * it, holding its place toward a requests limit until `record(log)` receives its record.
   * A request that cannot use tokens (`usesTokens` false, see `answersToRequestLimitsOnly`: a
   * stored response's read, input items, cancellation or deletion; a voice's read, update or
   * deletion) is judged by the requests lines only, so that a key past its tokens or cost can
   * still stop, read (and so bill) and delete what it runs in the background.
   */
  async enforce(key: AccessKeyRecord, now: number, log: LogRecord, usesTokens = true): Promise<void> {
    if (!quotaHasLimits(key.quota)) return;
    const meter = await this.#loadedMeter(key, now);
    // A request checked again (its key edited while its body came in) is judged without the place it holds, and keeps only that one.
    const admitted = this.#admitted.get(log);
    const own = admitted?.keyId === key.id ? admitted : undefined;
    const held = this.#held(key.id, meter);
    const line = firstReachedLine(linesWithPlaces(key, meter, (held?.admissions.size ?? 0) - (own ? 1 : 0), (held?.period ?? 0) - (own && own.at >= meter.periodStart ? 1 : 0)), usesTokens);
    if (line) throw new DataPlaneError('quota_exceeded', quotaReachedDetail(line), quotaRefusalHeaders(line, this.#latest));
    if (own) return;
    // No await since the check: no other request can take the same place, and `held` is for this meter's period.
    const places = held ?? { admissions: new Set<Admission>(), period: 0, periodStart: meter.periodStart };
    // Its record counts in the period the request started in, whenever it is checked.
    const admission = { keyId: key.id, at: log.created_at };
    places.admissions.add(admission);
    if (admission.at >= places.periodStart) places.period += 1;
    this.#inFlight.set(key.id, places);
    this.#admitted.set(log, admission);
  }

  /**
   * Every limit of the key beside what it used, as enforce() weighs them: the requests in flight
   * hold their places toward a requests limit (route inspection, which must answer as a request
   * would be). Null for a key without a quota.
   */
  async status(key: AccessKeyRecord, now: number): Promise<QuotaStatus | null> {
    if (key.quota === null) return null;
    if (!quotaHasLimits(key.quota)) return { exceeded: false, lines: [] };
    const meter = await this.#loadedMeter(key, now);
    const held = this.#held(key.id, meter);
    const lines = linesWithPlaces(key, meter, held?.admissions.size ?? 0, held?.period ?? 0);
    return { exceeded: firstReachedLine(lines) !== undefined, lines };
  }

  /**
   * Registers a WebSocket session of the key, started at `startedAt`, until the returned
   * function is called (at its end): the usage of the period it started in is kept for it.
   * Then `load` the key, which reads that usage if the period has ended already.
   */
  openSession(keyId: number, startedAt: number): () => void {
    const session = { startedAt };
    const running = this.#sessions.get(keyId) ?? new Set<Session>();
    running.add(session);
    this.#sessions.set(keyId, running);
    return () => {
      if (!running.delete(session)) return;
      if (running.size === 0) this.#sessions.delete(keyId);
      const meter = this.#meters.get(keyId);
      if (meter?.periodKind === undefined) return;
      for (const start of meter.earlier.keys()) if (!startedIn(this.#sessions.get(keyId), meter.periodKind, start)) meter.earlier.delete(start);
    };
  }

  /**
   * The tokens or cost limit that a session still running, started at `startedAt`, has gone
   * past with what it used so far (`tokens`, `cost`), added to the key's finished requests;
   * undefined while within them. A WebSocket session's usage is otherwise known only when it
   * closes. Per-period lines are judged in the period the session started in, where its record
   * counts, not in the one running now.
   */
  sessionOver(key: AccessKeyRecord, now: number, startedAt: number, tokens: number, cost: number): QuotaLine | undefined {
    const meter = quotaHasLimits(key.quota) ? this.#meters.get(key.id) : undefined;
    if (meter === undefined) return undefined;
    rollOver(meter, this.#seen(now), this.#sessions.get(key.id));
    const plus = (used: QuotaUsage) => ({ ...used, tokens: used.tokens + tokens, cost: addCost(used.cost, cost) });
    return quotaLines(key.quota!, plus(meter.total), plus(periodOf(meter, startedAt))).find((l) => l.metric !== 'requests' && l.used > l.limit);
  }

  /**
   * Reads the key's usage for the quota it has now, unless read already: a session whose key
   * was given a quota, or another one, is then judged by `sessionOver` against it. A meter
   * that lacks the ended period a session of the key started in (opened after the turn) is
   * read again.
   */
  async load(key: AccessKeyRecord, now: number): Promise<void> {
    if (!quotaHasLimits(key.quota)) return;
    const meter = await this.#loadedMeter(key, now);
    if (this.#endedSessionPeriods(key.id, meter).some((start) => !meter.earlier.has(start)) && this.#meters.get(key.id) === meter) {
      this.#meters.delete(key.id);
      await this.#loadedMeter(key, now);
    }
  }

  /** Counts a request of a metered key; call it for every record appended to the log store. */
  record(log: LogRecord): void {
    this.#seen(log.created_at);
    const admitted = this.#admitted.get(log);
    if (admitted !== undefined) {
      const places = this.#inFlight.get(admitted.keyId);
      if (places?.admissions.delete(admitted)) {
        if (admitted.at >= places.periodStart) places.period -= 1;
        if (places.admissions.size === 0) this.#inFlight.delete(admitted.keyId);
      }
      this.#admitted.delete(log);
    }
    const keyId = log.access_key_id;
    const meter = keyId === null ? undefined : this.#meters.get(keyId);
    if (meter === undefined) return;
    if (meter.queued !== undefined) meter.queued.push(log);
    else add(meter, log, this.#sessions.get(keyId!));
  }

  /**
   * Forgets the meters of AccessKeys that no longer exist, by a reading of the ids that do.
   * Only meters made before the reading began are judged (a key created since may have one
   * and not be in it), and only keys absent from it lose theirs: an edited key keeps its meter
   * and its places in flight. A deleted key's requests still in flight release their places
   * when their records arrive, as any other's.
   */
  async retain(existingKeyIds: () => Promise<Iterable<number>>): Promise<void> {
    const judged = [...this.#meters];
    const existing = new Set(await existingKeyIds());
    for (const [id, meter] of judged) if (!existing.has(id) && this.#meters.get(id) === meter) this.#meters.delete(id);
  }

  /** For diagnostics (tests of churn): how many keys have a meter, and how many have requests in flight. */
  diagnosticSizes(): { meters: number; inFlight: number } {
    return { meters: this.#meters.size, inFlight: this.#inFlight.size };
  }

  /** The key's places in flight (none: undefined), `period` counting those admitted since the meter's period started. */
  #held(keyId: number, meter: Meter): InFlight | undefined {
    const places = this.#inFlight.get(keyId);
    if (places === undefined || places.periodStart === meter.periodStart) return places;
    places.periodStart = meter.periodStart;
    places.period = 0;
    for (const admission of places.admissions) if (admission.at >= places.periodStart) places.period += 1;
    return places;
  }

  /** The latest time seen, `now` included. */
  #seen(now: number): number {
    if (now > this.#latest) this.#latest = now;
    return this.#latest;
  }

  async #loadedMeter(key: AccessKeyRecord, now: number): Promise<Meter> {
    const meter = this.#meterFor(key, this.#seen(now));
    await meter.loaded;
    // At the latest time, which records that arrived during the read may have moved on.
    rollOver(meter, this.#latest, this.#sessions.get(key.id));
    return meter;
  }

  /** The starts of the ended periods that sessions of the key still running started in. */
  #endedSessionPeriods(keyId: number, meter: Meter): number[] {
    const kind = meter.periodKind;
    if (kind === undefined) return [];
    const starts = new Set<number>();
    for (const session of this.#sessions.get(keyId) ?? []) starts.add(periodStart(kind, session.startedAt));
    return [...starts].filter((start) => start < meter.periodStart);
  }

  #meterFor(key: AccessKeyRecord, now: number): Meter {
    const quota = JSON.stringify(key.quota);
    const existing = this.#meters.get(key.id);
    if (existing !== undefined && existing.quota === quota) return existing;
    const periodKind = key.quota?.per_period?.period;
    const meter: Meter = { quota, total: nothingUsed(), periodKind, periodStart: periodKind ? periodStart(periodKind, now) : 0, period: nothingUsed(), earlier: new Map(), queued: [], loaded: Promise.resolve() };
    // Records appended after these reads are issued are not in their answers: they queue.
    const reads = [
      key.quota?.total ? this.#logs.keyUsage(key.id) : undefined,
      periodKind ? this.#logs.keyUsage(key.id, meter.periodStart, nextPeriodStart(periodKind, meter.periodStart)) : undefined,
      // The ended periods sessions still running started in.
      Promise.all(this.#endedSessionPeriods(key.id, meter).map(async (start) => [start, await this.#logs.keyUsage(key.id, start, nextPeriodStart(periodKind!, start))] as const)),
    ] as const;
    meter.loaded = Promise.all(reads).then(
      ([total, period, ended]) => {
        if (total) meter.total = total;
        meter.period = period ?? nothingUsed();
        for (const [start, usage] of ended) meter.earlier.set(start, usage);
        const queued = meter.queued ?? [];
        meter.queued = undefined;
        for (const log of queued) add(meter, log, this.#sessions.get(key.id));
      },
      (error: unknown) => {
        // Forgotten, so the next request reads again and the key works once the store does.
        this.#meters.delete(key.id);
        // Without its usage the quota cannot be enforced: refuse rather than let the key run unmetered.
        throw new DataPlaneError('log_store_unavailable');
      },
    );
    this.#meters.set(key.id, meter);
    return meter;
  }
}

/**
 * Whether an operation answers to the requests limits only: one on a stored object named in its
 * path that runs no model (a response's read, input items, cancellation, deletion; a voice's
 * read, update, deletion). Any other, a passthrough or search that runs no declared model
 * included, may spend tokens upstream and answers to every limit.
 */
export function answersToRequestLimitsOnly(op: Pick<OperationEntry, 'counts_tokens' | 'resource'>): boolean {
  return op.resource?.path_parameter !== undefined && !op.counts_tokens;
}

/** The key's quota lines, with `total` and `period` places in flight added to the requests used. */
function linesWithPlaces(key: AccessKeyRecord, meter: Meter, total: number, period: number): QuotaLine[] {
  return quotaLines(key.quota!, withPlaces(meter.total, total), withPlaces(meter.period, period));
}

/** Usage with `places` requests in flight counted as requests. */
function withPlaces(used: QuotaUsage, places: number): QuotaUsage {
  return { ...used, requests: used.requests + places };
}

function add(meter: Meter, log: LogRecord, sessions: Set<Session> | undefined): void {
  const tokens = log.usage.input_tokens + log.usage.output_tokens;
  // The gateway's own refusals (a quota_exceeded included) and model lists are not requests of the upstream.
  const requests = log.attempt_count > 0 ? 1 : 0;
  meter.total.requests += requests;
  meter.total.tokens += tokens;
  // Rounded as each cost is, so that the sums compare with a limit without float noise.
  meter.total.cost = addCost(meter.total.cost, log.cost);
  if (meter.periodKind === undefined) return;
  const period = rollOver(meter, log.created_at, sessions) ? meter.period : meter.earlier.get(periodStart(meter.periodKind, log.created_at));
  if (period === undefined) return;
  period.requests += requests;
  period.tokens += tokens;
  period.cost = addCost(period.cost, log.cost);
}

/**
 * Moves the period forward when `at` lies in a later one (a new period starts from nothing;
 * the ended one is kept while `sessions` started in it run); true when `at` lies in the current period.
 */
function rollOver(meter: Meter, at: number, sessions: Set<Session> | undefined): boolean {
  if (meter.periodKind === undefined) return false;
  const start = periodStart(meter.periodKind, at);
  if (start > meter.periodStart) {
    if (startedIn(sessions, meter.periodKind, meter.periodStart)) meter.earlier.set(meter.periodStart, meter.period);
    meter.periodStart = start;
    meter.period = nothingUsed();
  }
  return start === meter.periodStart;
}

/** Whether one of `sessions` started in the period starting at `start`. */
function startedIn(sessions: Set<Session> | undefined, kind: QuotaPeriod, start: number): boolean {
  for (const session of sessions ?? []) if (periodStart(kind, session.startedAt) === start) return true;
  return false;
}

/** The usage of the period that `at` lies in: the current one, or an ended one kept for a session (else nothing known). */
function periodOf(meter: Meter, at: number): QuotaUsage {
  if (meter.periodKind === undefined) return meter.period;
  const start = periodStart(meter.periodKind, at);
  return start === meter.periodStart ? meter.period : (meter.earlier.get(start) ?? nothingUsed());
}

const METERS = new WeakMap<LogReader, QuotaMeter>();

/** The one meter of a log store, shared by everything that appends to it. */
export function quotaMeterFor(logs: LogReader): QuotaMeter {
  let meter = METERS.get(logs);
  if (meter === undefined) {
    meter = new QuotaMeter(logs);
    METERS.set(logs, meter);
  }
  return meter;
}

/**
 * A refusal the SDKs must not retry (`x-should-retry: false`, which the openai and anthropic
 * SDKs obey): the shortest period is an hour, and an SDK that honours Retry-After as sent
 * would sleep until the period turns, days for a weekly limit, before raising. A per-period
 * limit still says when it lifts (Retry-After, the next period's start); a total limit never
 * lifts by itself, nor does a per-period limit of 0.
 */
function quotaRefusalHeaders(line: QuotaLine, now: number): Record<string, string> {
  if (line.scope !== 'per_period' || line.period === undefined || line.limit === 0) return NO_RETRY;
  return { ...NO_RETRY, 'retry-after': String(Math.max(1, Math.ceil((nextPeriodStart(line.period, now) - now) / 1000))) };
}
