import type { BoundDrops } from './pending-log-batches.ts';

/** At most one drop report per this long, per kind; drops in between are summed into the next one. */
const REPORT_INTERVAL_MS = 10_000;

/**
 * Reports records, and recorded bodies, a log store had to drop, through its `onError`: the
 * first drops at once (on the next turn), then at most one line per interval with the number
 * dropped since the last line, so that a store dropping thousands of records says so a few
 * times, not once per record. Records and bodies are counted apart, so that a line about bodies
 * never holds back the first line about records lost.
 */
export class DropReporter {
  readonly #records: DropCounter;
  readonly #bodies: DropCounter;

  constructor(onError: (error: unknown) => void, intervalMs = REPORT_INTERVAL_MS) {
    this.#records = new DropCounter(onError, intervalMs, (n) => `${n} request records were dropped`);
    this.#bodies = new DropCounter(onError, intervalMs, (n) => `${n} recorded request bodies were let go (their records keep state "dropped")`);
  }

  /** `drops` were let go because of `reason` (the write failure that kept them waiting, or the lag). */
  dropped(drops: BoundDrops, reason: unknown): void {
    this.#records.add(drops.records, reason);
    this.#bodies.add(drops.bodies, reason);
  }
}

class DropCounter {
  readonly #onError: (error: unknown) => void;
  readonly #intervalMs: number;
  readonly #describe: (count: number) => string;
  #unreported = 0;
  #reason = 'unknown reason';
  #timer: NodeJS.Timeout | undefined;

  constructor(onError: (error: unknown) => void, intervalMs: number, describe: (count: number) => string) {
    this.#onError = onError;
    this.#intervalMs = intervalMs;
    this.#describe = describe;
  }

  add(count: number, reason: unknown): void {
    if (count <= 0) return;
    this.#unreported += count;
    if (reason !== undefined) this.#reason = reason instanceof Error ? reason.message : String(reason);
    // On the next turn, so the batches a burst drops at once make one line.
    this.#timer ??= setTimeout(() => this.#report(), 0).unref();
  }

  #report(): void {
    this.#timer = undefined;
    if (this.#unreported === 0) return;
    this.#onError(new Error(`${this.#describe(this.#unreported)}: the log store could not keep up (${this.#reason})`));
    this.#unreported = 0;
    this.#timer = setTimeout(() => this.#report(), this.#intervalMs).unref();
  }
}
