interface FlushWaiter {
  /** The last batch the flush waits for. */
  through: number;
  /** When the flush was asked (wallClockMs). */
  since: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * WorkerLogStore's pending flushes: each waits until every batch up to its `through` is
 * acknowledged, and fails only with a failure that can concern it.
 */
export class FlushWaiters {
  #waiting: FlushWaiter[] = [];

  get size(): number {
    return this.#waiting.length;
  }

  wait(through: number, since: number): Promise<void> {
    return new Promise<void>((resolve, reject) => this.#waiting.push({ through, since, resolve, reject }));
  }

  /** Resolves the flushes whose batches are all acknowledged now. */
  settleAcknowledged(isUnacked: (through: number) => boolean): void {
    this.#waiting = this.#waiting.filter((waiter) => {
      if (isUnacked(waiter.through)) return true;
      waiter.resolve();
      return false;
    });
  }

  /**
   * Fails the flushes asked for before `startedAt` (every one by default). A failure the worker
   * reported for a commit that began earlier says nothing of a flush asked for since (its
   * message may still have been on its way): that flush waits for the worker's next commit.
   */
  reject(error: Error, startedAt = Infinity): void {
    this.#waiting = this.#waiting.filter((waiter) => {
      if (waiter.since > startedAt) return true;
      waiter.reject(error);
      return false;
    });
  }
}
