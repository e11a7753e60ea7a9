/**
 * One timer for the periodic checks of every open WebSocket session (its key's and its
 * credential's followers) instead of an interval per follower, running only while a check is
 * registered. A check never throws: each follower catches its own failures.
 */
export class SessionTicker {
  readonly #checks = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly intervalMs: number) {}

  /** Runs `check` at every tick until the returned function is called. */
  add(check: () => void): () => void {
    this.#checks.add(check);
    this.#timer ??= setInterval(() => this.#checks.forEach((c) => c()), this.intervalMs).unref();
    return () => {
      this.#checks.delete(check);
      if (this.#checks.size > 0 || this.#timer === undefined) return;
      clearInterval(this.#timer);
      this.#timer = undefined;
    };
  }
}
