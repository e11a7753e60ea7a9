import { Readable } from 'node:stream';
import { DataPlaneError } from '../data-plane-error.ts';
import { BodyRewriteError } from './body-rewrite-error.ts';
import { spliceDelta, type Splice } from './json-body-splices.ts';
import { JsonMemberScanner, MAX_SCANNED_MEMBERS, type ScannedObject } from './json-member-scanner.ts';
import { RefusedBodyPrefix } from './refused-body-prefix.ts';
import { createSpoolFile, discardSpoolFile, readSpliced, removeSpoolFile, type SpoolFile } from './spool-file.ts';
import { SpoolFailure, warnSpoolFailure } from './spool-failure.ts';
import { watchBodySilence } from './watch-body-silence.ts';

export interface ReceiveJsonOptions {
  /** The request's content-length, when it has one. */
  readonly declared: number | undefined;
  readonly maxBodyBytes: number;
  /** A body that ends within this many bytes is kept in memory whole. */
  readonly bufferedJsonBytes: number;
  /** Where a larger body is spooled. */
  readonly spoolDir: string;
  /** Top-level members to report for a spooled body, each with how many value bytes to keep. */
  readonly wanted: ReadonlyMap<string, number>;
  /** Picks out a top-level key of a spooled body that spells a wanted one in other case (ScannedObject's `caseVariant`). */
  readonly isCaseVariant?: (key: string) => boolean;
  /**
   * How much of a spooled body to keep in memory for the request log. A body refused as
   * malformed is still read up to this much, so that its record shows what was sent.
   */
  readonly keepBytes: number;
  /** A body silent this long is refused (`request_timeout`); none: not watched. */
  readonly idleTimeoutMs?: number;
}

export type ReceivedJson = { readonly kind: 'buffered'; readonly raw: Buffer } | { readonly kind: 'spooled'; readonly body: SpooledJsonBody };

/**
 * Reads a JSON body that has no content-length or a large one. A body that ends within
 * `bufferedJsonBytes` comes back whole, as if it had declared its length. A larger one goes to
 * a temporary file while JsonMemberScanner checks it and notes the members routing needs, so
 * that memory holds at most `bufferedJsonBytes` plus what the scanner keeps. Rejects with
 * DataPlaneError (request_too_large, request_timeout, client_closed), BodyRewriteError
 * (malformed JSON), either of them in a RefusedBodyPrefix when `keepBytes` asks for the body's
 * first bytes, or SpoolFailure (the temporary file could not be opened or written); the file
 * is then already being removed.
 */
export function receiveJsonBody(req: Readable, options: ReceiveJsonOptions): Promise<ReceivedJson> {
  return new Promise((resolve, reject) => {
    const head: Buffer[] = [];
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let size = 0;
    let spool: (SpoolFile & { scanner: JsonMemberScanner }) | undefined;
    let settled = false;
    let refused: BodyRewriteError | undefined;

    const fail = (error: unknown) => {
      if (settled) return;
      if (refused === undefined && error instanceof BodyRewriteError && options.keepBytes > 0) {
        refused = error;
        if (spool !== undefined) discardSpoolFile(spool);
        // The verdict stands; the rest of the record's prefix is read before it is given (as
        // capturePrefix's readOn reads on a refused form's).
        if (!req.readableEnded && size <= options.keepBytes) return void req.resume();
      }
      settled = true;
      silence.stop();
      detach();
      // Drained, not destroyed: the socket still has to carry the error response.
      if (!req.readableEnded && !req.destroyed) req.resume();
      if (refused !== undefined) return reject(new RefusedBodyPrefix(refused, Buffer.concat(kept), size));
      // A body cut short (too large, silent, its client gone) keeps what arrived for the log too.
      const cutShort = error instanceof DataPlaneError && options.keepBytes > 0;
      const arrived = cutShort ? (spool === undefined ? Buffer.concat(head).subarray(0, options.keepBytes) : Buffer.concat(kept)) : undefined;
      if (spool !== undefined) discardSpoolFile(spool);
      reject(arrived !== undefined ? new RefusedBodyPrefix(error as DataPlaneError, arrived, size) : error);
    };
    // The gateway's disk, not the client nor a bug: answered spool_unavailable. Reported once,
    // not again by a file already given up (end's callback repeats the stream's error).
    const spoolFailed = (error: Error) => {
      if (!settled) fail(warnSpoolFailure(new SpoolFailure(error)));
    };
    const keep = (chunk: Buffer) => {
      if (keptBytes >= options.keepBytes) return;
      const part = chunk.subarray(0, options.keepBytes - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    };
    const write = (chunk: Buffer): boolean => {
      spool!.scanner.push(chunk);
      return spool!.file.write(chunk);
    };
    const toFile = (chunk: Buffer): boolean => {
      keep(chunk);
      return write(chunk);
    };
    const spill = () => {
      spool = { ...createSpoolFile(options.spoolDir), scanner: new JsonMemberScanner(options.wanted, MAX_SCANNED_MEMBERS, options.isCaseVariant) };
      spool.file.on('error', spoolFailed).on('drain', () => req.resume());
      const chunks = head.splice(0);
      // Kept before they are scanned: a body refused among them still has its whole prefix kept.
      for (const chunk of chunks) keep(chunk);
      for (const chunk of chunks) write(chunk);
    };
    const onData = (chunk: Buffer) => {
      silence.touch();
      size += chunk.length;
      if (size > options.maxBodyBytes) return fail(new DataPlaneError('request_too_large'));
      if (refused !== undefined) {
        keep(chunk);
        if (size > options.keepBytes) fail(refused);
        return;
      }
      try {
        if (spool === undefined) {
          head.push(chunk);
          if (size > options.bufferedJsonBytes) spill();
        } else if (!toFile(chunk)) {
          req.pause();
        }
      } catch (error) {
        fail(error);
      }
    };
    const onEnd = () => {
      silence.stop();
      detach();
      if (refused !== undefined) return fail(refused);
      if (spool === undefined) {
        settled = true;
        resolve({ kind: 'buffered', raw: head.length === 1 ? head[0]! : Buffer.concat(head) });
        return;
      }
      let scanned: ScannedObject;
      try {
        scanned = spool.scanner.end();
      } catch (error) {
        return fail(error);
      }
      const { file, path: spooled } = spool;
      file.end((error?: Error | null) => {
        if (error) return spoolFailed(error);
        if (settled) return;
        settled = true;
        resolve({ kind: 'spooled', body: new SpooledJsonBody(spooled, size, scanned, Buffer.concat(kept)) });
      });
    };
    // The request stream fails or closes early only when the client's connection does.
    const onGone = () => {
      if (!req.readableEnded) fail(new DataPlaneError('client_closed', 'Its body had not ended.'));
    };
    const detach = () => {
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
    };
    const silence = watchBodySilence(req, options.idleTimeoutMs, fail);
    if (options.declared !== undefined && options.declared > options.bufferedJsonBytes) spill();
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone);
  });
}

/** A whole JSON body in a temporary file, readable any number of times with splices applied. */
export class SpooledJsonBody {
  readonly #path: string;
  /** Bytes in the file. */
  readonly size: number;
  /** The wanted members and the closing brace, as JsonMemberScanner found them. */
  readonly scanned: ScannedObject;
  /** The body's first `keepBytes`. */
  readonly head: Buffer;

  constructor(file: string, size: number, scanned: ScannedObject, head: Buffer) {
    this.#path = file;
    this.size = size;
    this.scanned = scanned;
    this.head = head;
  }

  /** The body with `splices` (sorted, not overlapping) applied, read from the file as it is consumed. */
  read(splices: readonly Splice[]): { stream: Readable; length: number } {
    return { stream: Readable.from(readSpliced(this.#path, this.size, splices), { objectMode: false }), length: this.size + spliceDelta(splices) };
  }

  /**
   * Removes the file. A read already under way keeps its open descriptor and finishes; the
   * space is freed when it closes.
   */
  release(): void {
    removeSpoolFile(this.#path);
  }
}
