import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { BodyRewriteError } from './body-rewrite-error.ts';
import { parseHeaderParams } from './header-params.ts';
import type { Splice } from './json-body-splices.ts';
import type { ModelSpan } from './model-rewrite.ts';
import { MultipartModelScanner } from './multipart-model-scanner.ts';
import { createSpoolFile, discardSpoolFile, removeSpoolFile, type SpoolFile } from './spool-file.ts';

const READ_BYTES = 64 * 1024;
/**
 * Bytes kept back from the end of a form until the scanner has seen it end well: more than any
 * closing delimiter (a boundary has at most 70 characters). A form cut short then never reaches
 * the upstream whole, even when its length was declared.
 */
const HELD_BACK_BYTES = 128;

/** What the form says once its model field has been read (or it ended without one). */
export interface FormModel {
  /** The client's model name and where its value sits, or undefined when the form has none. */
  readonly model: ModelSpan | undefined;
  /** Small text fields before the model (see MultipartModelScanner.fields). */
  readonly fields: ReadonlyMap<string, string>;
}

type State = 'receiving' | 'complete' | 'failed';

/**
 * A multipart form written to a spool file as it arrives, checked by MultipartModelScanner on
 * the way in, and readable any number of times (once per attempt) with the model value
 * replaced. A read follows the file while the form still comes, so the first attempt streams
 * as the upload does, and a later one sends the same bytes again from the file. Only what the
 * scanner accepted is read, and the last HELD_BACK_BYTES only once the form has ended well.
 * The source is never destroyed here: on failure it is left paused and detached, since for an
 * HTTP request that would also close the socket the error response needs.
 */
export class SpooledFormBody {
  /** Resolves once the model field is known; rejects when the form fails before that. */
  readonly ready: Promise<FormModel>;
  readonly #source: Readable;
  readonly #scanner: MultipartModelScanner;
  readonly #spool: SpoolFile;
  #state: State = 'receiving';
  #error: Error | undefined;
  /** Bytes scanned and written to the file. */
  #written = 0;
  #waiters: (() => void)[] = [];
  #settle!: { resolve(model: FormModel): void; reject(error: unknown): void };
  #settled = false;

  constructor(source: Readable, contentType: string, spoolDir: string) {
    this.#source = source;
    this.#scanner = new MultipartModelScanner(multipartBoundary(contentType));
    this.ready = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
    this.#spool = createSpoolFile(spoolDir);
    this.#spool.file.on('error', (error) => this.#fail(error)).on('drain', () => this.#state === 'receiving' && source.resume());
    source.on('data', this.#onData).on('end', this.#onEnd).on('error', this.#onError).on('close', this.#onClose);
  }

  /** The form with `splices` (at most the model's) applied, read from the file as it is written. */
  read(splices: readonly Splice[]): Readable {
    return Readable.from(this.#chunks(splices), { objectMode: false });
  }

  /** Stops reading the source and removes the file; a read under way fails. Idempotent. */
  release(): void {
    if (this.#state === 'complete') removeSpoolFile(this.#spool.path);
    else this.#fail(new Error('the request is over'));
  }

  readonly #onData = (chunk: Buffer) => {
    try {
      // Scanned before it is written: a chunk that breaks the form is never read back.
      this.#scanner.push(chunk);
    } catch (error) {
      return this.#fail(error as Error);
    }
    if (!this.#spool.file.write(chunk, (error) => (error ? this.#fail(error) : this.#wrote(chunk.length)))) this.#source.pause();
    if (this.#scanner.outcome !== undefined) this.#ready();
  };

  readonly #onEnd = () => {
    this.#detach();
    try {
      this.#scanner.end();
    } catch (error) {
      return this.#fail(error as Error);
    }
    this.#ready();
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

  #ready(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle.resolve({ model: this.#scanner.outcome?.model, fields: this.#scanner.fields });
  }

  #fail(error: Error): void {
    if (this.#state === 'failed') return;
    const wasComplete = this.#state === 'complete';
    this.#state = 'failed';
    this.#error = error;
    this.#detach();
    if (wasComplete) removeSpoolFile(this.#spool.path);
    else discardSpoolFile(this.#spool);
    if (!this.#settled) {
      this.#settled = true;
      this.#settle.reject(error);
    }
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
    let handle: FileHandle | undefined;
    let at = 0;
    try {
      for (;;) {
        if (this.#state === 'failed') throw this.#error!;
        const complete = this.#state === 'complete';
        const readable = complete ? this.#written : this.#written - HELD_BACK_BYTES;
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
            handle ??= await open(this.#spool.path, 'r');
            const want = Math.min(READ_BYTES, stop - at);
            const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(want), 0, want, at);
            if (bytesRead === 0) throw new Error('the spooled request body is shorter than it was');
            at += bytesRead;
            yield bytesRead === want ? buffer : buffer.subarray(0, bytesRead);
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

/** The boundary of a multipart/form-data content type; BodyRewriteError when it has none or a bad one. */
export function multipartBoundary(contentType: string | undefined): string {
  const parsed = contentType === undefined ? undefined : parseHeaderParams(contentType);
  const boundary = parsed?.params.get('boundary');
  if (parsed?.type !== 'multipart/form-data' || boundary === undefined || !/^[^\r\n]{1,70}$/.test(boundary)) {
    throw new BodyRewriteError('invalid_multipart', 'expected multipart/form-data with a boundary of 1 to 70 characters');
  }
  return boundary;
}
