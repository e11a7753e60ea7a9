import { Readable } from 'node:stream';
import { DataPlaneError } from '../data-plane-error.ts';
import { BodyRewriteError } from './body-rewrite-error.ts';
import { FollowedSpoolFile } from './followed-spool-file.ts';
import { parseHeaderParams } from './header-params.ts';
import type { Splice } from './json-body-splices.ts';
import type { ModelSpan } from './model-rewrite.ts';
import { MultipartModelScanner } from './multipart-model-scanner.ts';

/**
 * Bytes kept back from the end of a form until the scanner has seen it end well: more than any
 * closing delimiter (a boundary has at most 70 characters). A form cut short then never reaches
 * the upstream whole, even when its length was declared.
 */
const HELD_BACK_BYTES = 128;

/**
 * What the form says once its model field has been read and then a file part or a text part past
 * SMALL_FIELD_BYTES began, or the form ended (or it ended without a model): the first attempt begins then.
 */
export interface FormModel {
  /** The client's model name and where its value sits, or undefined when the form has none. */
  readonly model: ModelSpan | undefined;
  /**
   * Small text fields read before the attempt began: those before the model and those after it up
   * to the next file part or large text part (see MultipartModelScanner.fields).
   */
  readonly fields: ReadonlyMap<string, string>;
}

/**
 * A multipart form spooled as it arrives (a FollowedSpoolFile), checked by
 * MultipartModelScanner on the way in, and readable once per attempt with the model value
 * replaced. Only what the scanner accepted is read, and the last HELD_BACK_BYTES only once the
 * form has ended well.
 */
export class SpooledFormBody {
  /** Resolves with the FormModel once it is known; rejects when the form fails before that. */
  readonly ready: Promise<FormModel>;
  readonly #scanner: MultipartModelScanner;
  readonly #spool: FollowedSpoolFile;
  #settle!: { resolve(model: FormModel): void; reject(error: unknown): void };
  #settled = false;

  constructor(source: Readable, contentType: string, spoolDir: string) {
    this.#scanner = new MultipartModelScanner(multipartBoundary(contentType));
    this.ready = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
    this.#spool = new FollowedSpoolFile(source, spoolDir, {
      // Scanned before it is written: a chunk that breaks the form is never read back.
      chunk: (chunk) => {
        this.#scanner.push(chunk);
        if (this.#scanner.outcome !== undefined) this.#ready();
      },
      end: () => {
        this.#scanner.end();
        this.#ready();
      },
      failed: (error) => {
        if (this.#settled) return;
        this.#settled = true;
        this.#settle.reject(error);
      },
      heldBackBytes: HELD_BACK_BYTES,
    });
  }

  /** The form with `splices` (at most the model's) applied, read from the file as it is written. */
  read(splices: readonly Splice[]): Readable {
    return this.#spool.read(splices);
  }

  /** Stops reading the source and removes the file; a read under way fails. Idempotent. */
  release(): void {
    this.#spool.release();
  }

  #ready(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle.resolve({ model: this.#scanner.outcome?.model, fields: this.#scanner.fields });
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

/**
 * The splice that gives a form's model field `upstream`. A name with CR or LF could start a
 * delimiter line inside the value, and one with a lone surrogate has no UTF-8 spelling, so the
 * Group's mapping cannot be sent: refused before any
 * byte goes upstream, the gateway's answer and no credential's fault.
 */
export function formModelSplice(span: ModelSpan, upstream: string): Splice {
  if (/[\r\n]/.test(upstream)) throw new DataPlaneError('model_mapping_unusable', 'A form field cannot carry CR or LF.');
  // A lone surrogate has no UTF-8 spelling: the field would carry U+FFFD, another model's name.
  if (!upstream.isWellFormed()) throw new DataPlaneError('model_mapping_unusable', 'A form field cannot carry a lone surrogate.');
  return { start: span.start, end: span.end, bytes: Buffer.from(upstream, 'utf8') };
}
