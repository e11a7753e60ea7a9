import { droppedBody } from './body-row.ts';
import type { SealedLogBatch } from './write-log-batch.ts';

/** Default cap on records waiting to be written (`maxBuffered`). */
export const DEFAULT_MAX_BUFFERED = 100_000;
/** Default cap on what waiting records take (`maxBufferedBytes`): their encoding and their recorded bodies' text. */
export const DEFAULT_MAX_BUFFERED_BYTES = 128 * 1024 * 1024;

/** What one `bound` let go: whole records, and recorded bodies (their records kept, the body marked `dropped`). */
export interface BoundDrops {
  records: number;
  bodies: number;
}

/**
 * Sealed batches waiting to be written or acknowledged, in order, by id, with their totals of
 * records and bytes (each batch's `bytes`, counted once when it was sealed). `bound` keeps them
 * within both caps while writes fail.
 */
export class PendingLogBatches {
  readonly #batches = new Map<number, SealedLogBatch>();
  #records = 0;
  #bytes = 0;

  /** Batches waiting. */
  get size(): number {
    return this.#batches.size;
  }

  get records(): number {
    return this.#records;
  }

  get bytes(): number {
    return this.#bytes;
  }

  add(id: number, batch: SealedLogBatch): void {
    this.#batches.set(id, batch);
    this.#records += batch.count;
    this.#bytes += batch.bytes;
  }

  /** The oldest batch, with its id. */
  first(): [number, SealedLogBatch] | undefined {
    const first = this.#batches.entries().next();
    return first.done ? undefined : first.value;
  }

  delete(id: number): void {
    const batch = this.#batches.get(id);
    if (batch === undefined) return;
    this.#batches.delete(id);
    this.#records -= batch.count;
    this.#bytes -= batch.bytes;
  }

  entries(): IterableIterator<[number, SealedLogBatch]> {
    return this.#batches.entries();
  }

  /**
   * Brings the batches within `maxRecords` and `maxBytes`. Over the bytes, the recorded bodies
   * go first, oldest batch first: their records are kept, each body marked `dropped`. Then,
   * over either cap, whole oldest batches go, never the newest. Returns the records dropped and
   * the bodies let go (a body counts once let go, whether or not its record is dropped later).
   */
  bound(maxRecords: number, maxBytes: number): BoundDrops {
    let bodies = 0;
    if (this.#bytes > maxBytes) {
      for (const [id, batch] of this.#batches) {
        if (this.#bytes <= maxBytes) break;
        // Bytes beyond the encoding are bodies' text; dropped bodies have none left.
        if (batch.bodies === undefined || batch.bytes === batch.data.byteLength) continue;
        this.#bytes -= batch.bytes - batch.data.byteLength;
        this.#batches.set(id, { ...batch, bodies: batch.bodies.map(droppedBody), bytes: batch.data.byteLength });
        bodies += batch.bodies.length;
      }
    }
    let records = 0;
    for (const [id, batch] of this.#batches) {
      if ((this.#records <= maxRecords && this.#bytes <= maxBytes) || this.#batches.size === 1) break;
      this.delete(id);
      records += batch.count;
    }
    return { records, bodies };
  }
}
