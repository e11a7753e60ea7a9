import { Readable } from 'node:stream';
import type { Splice } from './json-body-splices.ts';
import type { BodyScanner, ModelRewrite, ScanOutcome } from './model-rewrite.ts';
import { createSpoolFile, discardSpoolFile, readSpliced, removeSpoolFile, type SpoolFile } from './spool-file.ts';

interface Prefix {
  /** The bytes read, in memory; empty when they went to `spooled`. */
  readonly chunks: Buffer[];
  /** The bytes read, when there were more than maxPrefixBytes before the scanner settled. */
  readonly spooled: SpooledPrefix | undefined;
  readonly outcome: ScanOutcome;
  /** The source ended while the prefix was read (scanner.end() has run). */
  readonly ended: boolean;
}

interface SpooledPrefix {
  readonly size: number;
  readonly path: string;
}

/**
 * Reads `source` until `scanner` settles, keeping only those bytes, then offers the body with
 * the model span replaced by `encodeModel(upstream)` and the rest of the source piped through.
 * Up to `maxPrefixBytes` are kept in memory; past that (a large file before the model field)
 * the bytes read go to a temporary file in `spoolDir`, with backpressure, until the scanner
 * settles, and the body is read back from it. The file is removed once the body has been read
 * from it, when that body is dropped, on failure, or by release(), whichever comes first.
 * The source is never destroyed here: on failure it is left paused and detached, because for
 * an HTTP request destroying it would also close the socket the error response needs.
 */
export async function spliceModelStream(
  source: Readable,
  scanner: BodyScanner,
  maxPrefixBytes: number,
  spoolDir: string,
  encodeModel: (upstream: string) => Buffer,
): Promise<ModelRewrite> {
  const prefix = await readPrefix(source, scanner, maxPrefixBytes, spoolDir);
  const span = prefix.outcome.model;
  let released = false;
  const release = () => {
    if (released || prefix.spooled === undefined) return;
    released = true;
    removeSpoolFile(prefix.spooled.path);
  };
  let taken = false;
  return {
    model: span?.value,
    replaceModel(upstream) {
      if (taken) throw new Error('the rewritten body has already been taken');
      taken = true;
      if (prefix.spooled !== undefined) {
        const splices: Splice[] = span === undefined ? [] : [{ start: span.start, end: span.end, bytes: encodeModel(upstream) }];
        const tail = bodyStream([], prefix.ended, source, scanner);
        return {
          body: spooledBody(prefix.spooled, splices, tail, release),
          lengthDelta: splices.reduce((sum, splice) => sum + splice.bytes.length - (splice.end - splice.start), 0),
        };
      }
      if (span === undefined) return { body: bodyStream(prefix.chunks, prefix.ended, source, scanner), lengthDelta: 0 };
      const replacement = encodeModel(upstream);
      const total = prefix.chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      const head = [
        ...sliceChunks(prefix.chunks, 0, span.start),
        replacement,
        ...sliceChunks(prefix.chunks, span.end, total),
      ];
      return {
        body: bodyStream(head, prefix.ended, source, scanner),
        lengthDelta: replacement.length - (span.end - span.start),
      };
    },
    release,
  };
}

function readPrefix(source: Readable, scanner: BodyScanner, maxPrefixBytes: number, spoolDir: string): Promise<Prefix> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let read = 0;
    let spool: SpoolFile | undefined;
    let settled = false;
    const detach = () => {
      // Pause before detaching so that no chunk is emitted with nobody listening.
      source.pause();
      source.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      detach();
      if (spool !== undefined) discardSpoolFile(spool);
      reject(error);
    };
    const succeed = (outcome: ScanOutcome, ended: boolean) => {
      settled = true;
      detach();
      source.on('error', parked);
      if (spool === undefined) {
        resolve({ chunks, spooled: undefined, outcome, ended });
        return;
      }
      const written = spool;
      written.file.end((error?: Error | null) => {
        if (!error) return resolve({ chunks, spooled: { size: read, path: written.path }, outcome, ended });
        discardSpoolFile(written);
        reject(error);
      });
    };
    const spill = () => {
      spool = createSpoolFile(spoolDir);
      spool.file.on('error', fail).on('drain', () => settled || source.resume());
      for (const chunk of chunks.splice(0)) spool.file.write(chunk);
      // The prefix is in the file's queue now; nothing more is read until it has been written.
      if (spool.file.writableNeedDrain) source.pause();
    };
    const onData = (data: unknown) => {
      try {
        const chunk = toBuffer(data);
        read += chunk.length;
        if (spool === undefined) chunks.push(chunk);
        else if (!spool.file.write(chunk)) source.pause();
        scanner.push(chunk);
        const outcome = scanner.outcome;
        if (outcome !== undefined) succeed(outcome, false);
        else if (spool === undefined && read > maxPrefixBytes) spill();
      } catch (error) {
        fail(error);
      }
    };
    const onEnd = () => {
      try {
        succeed(scanner.end(), true);
      } catch (error) {
        fail(error);
      }
    };
    const onError = (error: unknown) => fail(error);
    const onClose = () => fail(prematureClose());
    source.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
    // A source paused earlier does not start flowing just because a data listener was added.
    source.resume();
  });
}

/**
 * The spooled bytes with `splices` applied, then `tail`. The file goes as soon as it has been
 * read, or when the body is dropped before that.
 */
function spooledBody(spooled: SpooledPrefix, splices: readonly Splice[], tail: Readable, release: () => void): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      yield* readSpliced(spooled.path, spooled.size, splices);
      release();
      yield* tail;
    } finally {
      release();
      // Detaches the tail from the source when the body is dropped before it got there.
      tail.destroy();
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

/**
 * Bytes kept back from the end of a form until the scanner has seen it end well: more than any
 * closing delimiter (a boundary has at most 70 characters). A form cut short (no closing
 * boundary) then never reaches the upstream whole, even when its length was declared and the
 * upstream would otherwise take the bytes it got for a complete request.
 */
const HELD_BACK_BYTES = 128;

/** `head`, then the rest of `source` with backpressure, still fed to the scanner. */
function bodyStream(head: Buffer[], scannerEnded: boolean, source: Readable, scanner: BodyScanner): Readable {
  let headSent = false;
  // A paused source still ends (or fails) once its buffer is empty, maybe before we listen again.
  let sourceEnded = scannerEnded || source.readableEnded;
  let held: Buffer | undefined;
  /** Pushes all but the last HELD_BACK_BYTES seen so far; false when the reader wants no more now. */
  const send = (piece: Buffer): boolean => {
    if (piece.length === 0) return true;
    if (piece.length >= HELD_BACK_BYTES) {
      const before = held;
      held = piece.subarray(piece.length - HELD_BACK_BYTES);
      if (before !== undefined) output.push(before);
      return output.push(piece.subarray(0, piece.length - HELD_BACK_BYTES));
    }
    const joined = held === undefined ? piece : Buffer.concat([held, piece]);
    held = joined.length > HELD_BACK_BYTES ? joined.subarray(joined.length - HELD_BACK_BYTES) : joined;
    return joined.length > HELD_BACK_BYTES ? output.push(joined.subarray(0, joined.length - HELD_BACK_BYTES)) : true;
  };
  const finish = () => {
    try {
      if (!scannerEnded) scanner.end();
    } catch (error) {
      output.destroy(error as Error);
      return;
    }
    if (held !== undefined) output.push(held);
    output.push(null);
  };
  const detach = () => {
    source.pause();
    source.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
  };
  const output = new Readable({
    read() {
      if (headSent) {
        source.resume();
        return;
      }
      headSent = true;
      let wantsMore = true;
      for (const piece of head) if (!send(piece)) wantsMore = false;
      if (sourceEnded) finish();
      else if (wantsMore) source.resume();
    },
    destroy(error, callback) {
      detach();
      callback(error);
    },
  });
  const onData = (data: unknown) => {
    const chunk = toBuffer(data);
    try {
      // Scanned before it is pushed: a chunk that breaks the format never reaches the upstream.
      scanner.push(chunk);
    } catch (error) {
      output.destroy(error as Error);
      return;
    }
    if (!send(chunk)) source.pause();
  };
  const onEnd = () => {
    detach();
    sourceEnded = true;
    if (headSent) finish();
  };
  const onError = (error: Error) => output.destroy(error);
  const onClose = () => output.destroy(prematureClose());
  source.off('error', parked);
  if (sourceEnded) return output;
  if (source.destroyed) {
    output.destroy(source.errored ?? prematureClose());
    return output;
  }
  // The source is paused (flowing === false), so these listeners do not start it: read() does.
  source.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  return output;
}

// Until replaceModel() an unlistened 'error' would crash the process; bodyStream() then reads
// source.errored instead.
function parked(): void {}

function sliceChunks(chunks: Buffer[], from: number, to: number): Buffer[] {
  const out: Buffer[] = [];
  let offset = 0;
  for (const chunk of chunks) {
    const lo = Math.max(from - offset, 0);
    const hi = Math.min(to - offset, chunk.length);
    if (lo < hi) out.push(lo === 0 && hi === chunk.length ? chunk : chunk.subarray(lo, hi));
    offset += chunk.length;
  }
  return out;
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new TypeError('request body chunks must be bytes or strings');
}

function prematureClose(): Error {
  return new Error('the request body closed before it ended');
}
