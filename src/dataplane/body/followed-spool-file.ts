import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Splice } from './json-body-splices.ts';
import { SpoolFailure, warnSpoolFailure } from './spool-failure.ts';
import { createSpoolFile, discardSpoolFile, openSpoolFile, READ_BYTES, readSpoolChunk, removeSpoolFile, type SpoolFile } from './spool-file.ts';

type State = 'receiving' | 'complete' | 'failed';

/** What a body that is checked on its way in adds to FollowedSpoolFile. */
export interface SpoolChecks {
  /** Sees each chunk before it is written, and throws to refuse the body: a refused chunk is never read back. */
  chunk?(chunk: Buffer): void;
  /** The source ended; throws to refuse the body, so the bytes held back are never read. */
  end?(): void;
  /** The body failed (its source, a check, the spool file, or release() before it ended). */
  failed?(error: Error): void;
  /** Bytes of the end kept from reads until the source has ended and `end` accepted it. */
  heldBackBytes?: number;
}

/**
 * A request body written to a spool file as it arrives and readable any number of times (once
 * per attempt), with splices applied on the way. A read follows the file while the body still
 * comes, so the first attempt streams as the upload does, and a later one sends the same bytes
 * again from the file. A read ends only once the source has ended and every byte is on disk;
 * when the source fails, reads fail with its error (a refusal such as request_too_large stays
 * the client's), and when the spool file does, with a SpoolFailure. The source is never
 * destroyed here: on failure it is left paused and detached, since for an HTTP request that
 * would also close the socket the error response needs.
 */
export class FollowedSpoolFile {
  /** Resolves once the spool file is open; rejects when it cannot be, or the body fails first. */
  readonly opened: Promise<void>;
  readonly #source: Readable;
  readonly #spool: SpoolFile;
  readonly #checks: SpoolChecks;
  #state: State = 'receiving';
  #error: Error | undefined;
  /** Bytes written to the file. */
  #written = 0;
  #waiters: (() => void)[] = [];
  #rejectOpened!: (error: Error) => void;

  constructor(source: Readable, spoolDir: string, checks: SpoolChecks = {}) {
    this.#source = source;
    this.#checks = checks;
    this.#spool = createSpoolFile(spoolDir);
    this.opened = new Promise((resolve, reject) => {
      this.#rejectOpened = reject;
      this.#spool.file.once('ready', () => resolve());
    });
    // A failure after nobody awaits it any more reaches reads instead.
    this.opened.catch(() => {});
    this.#spool.file.on('error', (error) => this.#fail(new SpoolFailure(error))).on('drain', () => this.#state === 'receiving' && source.resume());
    source.on('data', this.#onData).on('end', this.#onEnd).on('error', this.#onError).on('close', this.#onClose);
  }

  /** The body with `splices` (sorted, not overlapping) applied, read from the file as it is written. */
  read(splices: readonly Splice[] = []): Readable {
    return Readable.from(this.#chunks(splices), { objectMode: false });
  }

  /** Stops reading the source and removes the file; a read under way fails. Idempotent. */
  release(): void {
    if (this.#state === 'complete') removeSpoolFile(this.#spool.path);
    else this.#fail(new Error('the request is over'));
  }

  readonly #onData = (chunk: Buffer) => {
    try {
      this.#checks.chunk?.(chunk);
    } catch (error) {
      return this.#fail(error as Error);
    }
    const written = (error?: Error | null) => (error ? this.#fail(new SpoolFailure(error)) : this.#wrote(chunk.length));
    if (!this.#spool.file.write(chunk, written)) this.#source.pause();
  };

  readonly #onEnd = () => {
    this.#detach();
    try {
      this.#checks.end?.();
    } catch (error) {
      return this.#fail(error as Error);
    }
    this.#spool.file.end((error?: Error | null) => {
      if (error) return this.#fail(new SpoolFailure(error));
      if (this.#state !== 'receiving') return;
      this.#state = 'complete';
      this.#wake();
    });
  };

  readonly #onError = (error: Error) => this.#fail(error);
  readonly #onClose = () => this.#fail(new Error('the request body closed before it ended'));

  #wrote(bytes: number): void {
    this.#written += bytes;
    this.#wake();
  }

  #fail(error: Error): void {
    if (this.#state === 'failed') return;
    const wasComplete = this.#state === 'complete';
    this.#state = 'failed';
    this.#error = error;
    if (error instanceof SpoolFailure) warnSpoolFailure(error);
    this.#detach();
    if (wasComplete) removeSpoolFile(this.#spool.path);
    else discardSpoolFile(this.#spool);
    this.#rejectOpened(error);
    this.#checks.failed?.(error);
    this.#wake();
  }

  #detach(): void {
    // Paused before detaching so that no chunk is emitted with nobody listening.
    this.#source.pause();
    this.#source.off('data', this.#onData).off('end', this.#onEnd).off('error', this.#onError).off('close', this.#onClose);
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  #changed(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  async *#chunks(splices: readonly Splice[]): AsyncGenerator<Buffer> {
    const pending = [...splices];
    const heldBack = this.#checks.heldBackBytes ?? 0;
    let handle: FileHandle | undefined;
    let at = 0;
    try {
      for (;;) {
        if (this.#state === 'failed') throw this.#error!;
        const complete = this.#state === 'complete';
        const readable = complete ? this.#written : this.#written - heldBack;
        const splice = pending[0];
        if (splice !== undefined && at === splice.start) {
          if (readable >= splice.end) {
            if (splice.bytes.length > 0) yield splice.bytes;
            at = splice.end;
            pending.shift();
            continue;
          }
        } else {
          const stop = Math.min(readable, splice?.start ?? readable);
          if (at < stop) {
            handle ??= await openSpoolFile(this.#spool.path);
            const chunk = await readSpoolChunk(handle, at, Math.min(READ_BYTES, stop - at));
            at += chunk.length;
            yield chunk;
            continue;
          }
          if (complete && at >= this.#written) return;
        }
        await this.#changed();
      }
    } finally {
      await handle?.close();
    }
  }
}
