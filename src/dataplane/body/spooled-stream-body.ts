import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createSpoolFile, discardSpoolFile, removeSpoolFile, type SpoolFile } from './spool-file.ts';

const READ_BYTES = 64 * 1024;

type State = 'receiving' | 'complete' | 'failed';

/**
 * A body the gateway reads nothing of (a passthrough, a form that names no model), written to a
 * spool file as it arrives and readable any number of times (once per attempt), as sent. A read
 * follows the file while the body still comes, so the first attempt streams as the upload does,
 * and a later one sends the same bytes again from the file. A read ends only once the source
 * has ended and every byte is on disk; when the source fails, reads fail with its error (a
 * refusal such as request_too_large stays the client's). As SpooledFormBody, the source is
 * never destroyed here: on failure it is left paused and detached.
 */
export class SpooledStreamBody {
  /** Resolves once the spool file is open; rejects when it cannot be, or the source fails first. */
  readonly opened: Promise<void>;
  readonly #source: Readable;
  readonly #spool: SpoolFile;
  #state: State = 'receiving';
  #error: Error | undefined;
  /** Bytes written to the file. */
  #written = 0;
  #waiters: (() => void)[] = [];
  #rejectOpened!: (error: Error) => void;

  constructor(source: Readable, spoolDir: string) {
    this.#source = source;
    this.#spool = createSpoolFile(spoolDir);
    this.opened = new Promise((resolve, reject) => {
      this.#rejectOpened = reject;
      this.#spool.file.once('ready', () => resolve());
    });
    // A failure after nobody awaits it any more reaches reads instead.
    this.opened.catch(() => {});
    this.#spool.file.on('error', (error) => this.#fail(error)).on('drain', () => this.#state === 'receiving' && source.resume());
    source.on('data', this.#onData).on('end', this.#onEnd).on('error', this.#onError).on('close', this.#onClose);
  }

  /** The body as sent, read from the file as it is written. */
  read(): Readable {
    return Readable.from(this.#chunks(), { objectMode: false });
  }

  /** Stops reading the source and removes the file; a read under way fails. Idempotent. */
  release(): void {
    if (this.#state === 'complete') removeSpoolFile(this.#spool.path);
    else this.#fail(new Error('the request is over'));
  }

  readonly #onData = (chunk: Buffer) => {
    if (!this.#spool.file.write(chunk, (error) => (error ? this.#fail(error) : this.#wrote(chunk.length)))) this.#source.pause();
  };

  readonly #onEnd = () => {
    this.#detach();
    this.#spool.file.end((error?: Error | null) => {
      if (error) return this.#fail(error);
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
    this.#detach();
    if (wasComplete) removeSpoolFile(this.#spool.path);
    else discardSpoolFile(this.#spool);
    this.#rejectOpened(error);
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

  async *#chunks(): AsyncGenerator<Buffer> {
    let handle: FileHandle | undefined;
    let at = 0;
    try {
      for (;;) {
        if (this.#state === 'failed') throw this.#error!;
        if (at < this.#written) {
          handle ??= await open(this.#spool.path, 'r');
          const want = Math.min(READ_BYTES, this.#written - at);
          const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(want), 0, want, at);
          if (bytesRead === 0) throw new Error('the spooled request body is shorter than it was');
          at += bytesRead;
          yield bytesRead === want ? buffer : buffer.subarray(0, bytesRead);
          continue;
        }
        if (this.#state === 'complete') return;
        await this.#changed();
      }
    } finally {
      await handle?.close();
    }
  }
}
