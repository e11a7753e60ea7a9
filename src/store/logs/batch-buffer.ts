export interface BatchBufferOptions {
  /** Records per write (one transaction, roughly 10 us per record here); reaching it triggers a write on the next turn. Default 256. */
  batchSize?: number;
  /** Longest a record waits in memory. Default 100 ms. */
  flushIntervalMs?: number;
  /** Records kept while writes fail; the oldest are dropped beyond it. Default 100 000. */
  maxBuffered?: number;
  onError?: (error: unknown) => void;
}

/**
 * Buffers items and hands them to `write` in batches: on a short timer, and on the next
 * turn of the event loop when a batch is full. One write handles at most `batchSize` items,
 * then yields, so a burst never holds the event loop for long.
 */
export class BatchBuffer<T> {
  readonly #write: (batch: T[]) => void;
  readonly #batchSize: number;
  readonly #flushIntervalMs: number;
  readonly #maxBuffered: number;
  readonly #onError: (error: unknown) => void;
  #items: T[] = [];
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #dropped = 0;
  #failing = false;

  constructor(write: (batch: T[]) => void, options: BatchBufferOptions = {}) {
    this.#write = write;
    this.#batchSize = options.batchSize ?? 256;
    this.#flushIntervalMs = options.flushIntervalMs ?? 100;
    this.#maxBuffered = options.maxBuffered ?? 100_000;
    this.#onError = options.onError ?? (() => {});
  }

  get size(): number {
    return this.#items.length;
  }

  /** Items dropped because writes kept failing while the buffer was full. */
  get dropped(): number {
    return this.#dropped;
  }

  add(item: T): void {
    this.#items.push(item);
    if (this.#items.length > this.#maxBuffered) {
      this.#items.shift();
      this.#dropped++;
    }
    this.#schedule();
  }

  /** Writes everything now, synchronously. Throws when a write fails (items are kept). */
  flushAll(): void {
    this.#cancelTimers();
    try {
      while (this.#items.length > 0) this.#writeBatchOrKeep();
      this.#failing = false;
    } catch (error) {
      this.#failing = true;
      this.#schedule();
      throw error;
    }
  }

  #schedule(): void {
    if (this.#items.length === 0) return;
    // While writes fail, only the timer retries, so a full buffer does not spin.
    if (this.#items.length >= this.#batchSize && !this.#failing) {
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        this.#writeOneBatch();
      });
    } else {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        this.#writeOneBatch();
      }, this.#flushIntervalMs).unref();
    }
  }

  #writeOneBatch(): void {
    try {
      this.#writeBatchOrKeep();
      this.#failing = false;
    } catch (error) {
      this.#failing = true;
      this.#onError(error);
    }
    this.#schedule();
  }

  #writeBatchOrKeep(): void {
    const batch = this.#items.splice(0, this.#batchSize);
    try {
      this.#write(batch);
    } catch (error) {
      this.#items.unshift(...batch);
      throw error;
    }
  }

  #cancelTimers(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }
}
