/** At most one drop report per this long; drops in between are summed into the next one. */
const REPORT_INTERVAL_MS = 10_000;

/**
 * Reports records a log store had to drop, through its `onError`: the first drops at once (on
 * the next turn), then
 * at most one line per interval with the number dropped since the last line, so that a store
 * dropping thousands of records says so a few times, not once per record.
 */
export class DropReporter {
  readonly #onError: (error: unknown) => void;
  readonly #intervalMs: number;
  #unreported = 0;
  #reason = 'unknown reason';
  #timer: NodeJS.Timeout | undefined;

  constructor(onError: (error: unknown) => void, intervalMs = REPORT_INTERVAL_MS) {
    this.#onError = onError;
    this.#intervalMs = intervalMs;
  }

  /** `count` records were dropped because of `reason` (the write failure that kept them waiting). */
  dropped(count: number, reason: unknown): void {
    if (count <= 0) return;
    this.#unreported += count;
    if (reason !== undefined) this.#reason = reason instanceof Error ? reason.message : String(reason);
    // On the next turn, so the batches a burst drops at once make one line.
    this.#timer ??= setTimeout(() => this.#report(), 0).unref();
  }

  #report(): void {
    this.#timer = undefined;
    if (this.#unreported === 0) return;
    this.#onError(new Error(`${this.#unreported} request records were dropped: the log store could not keep up (${this.#reason})`));
    this.#unreported = 0;
    this.#timer = setTimeout(() => this.#report(), this.#intervalMs).unref();
  }
}
