import { Readable } from 'node:stream';
import { BodyRewriteError } from './body-rewrite-error.ts';
import type { BodyScanner, ModelRewrite, ScanOutcome } from './model-rewrite.ts';

interface Prefix {
  readonly chunks: Buffer[];
  readonly outcome: ScanOutcome;
  /** The source ended while the prefix was read (scanner.end() has run). */
  readonly ended: boolean;
}

/**
 * Reads `source` until `scanner` settles, keeping only those bytes, then offers the body with
 * the model span replaced by `encodeModel(upstream)` and the rest of the source piped through.
 * The source is never destroyed here: on failure it is left paused and detached, because for
 * an HTTP request destroying it would also close the socket the error response needs.
 */
export async function spliceModelStream(
  source: Readable,
  scanner: BodyScanner,
  maxPrefixBytes: number,
  encodeModel: (upstream: string) => Buffer,
): Promise<ModelRewrite> {
  const prefix = await readPrefix(source, scanner, maxPrefixBytes);
  const span = prefix.outcome.model;
  let taken = false;
  return {
    model: span?.value,
    replaceModel(upstream) {
      if (taken) throw new Error('the rewritten body has already been taken');
      taken = true;
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
  };
}

function readPrefix(source: Readable, scanner: BodyScanner, maxPrefixBytes: number): Promise<Prefix> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let read = 0;
    const settle = (result: Prefix | { error: unknown }) => {
      // Pause before detaching so that no chunk is emitted with nobody listening.
      source.pause();
      source.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if ('error' in result) {
        reject(result.error);
        return;
      }
      source.on('error', parked);
      resolve(result);
    };
    const onData = (data: unknown) => {
      try {
        const chunk = toBuffer(data);
        chunks.push(chunk);
        read += chunk.length;
        scanner.push(chunk);
        const outcome = scanner.outcome;
        if ((outcome?.at ?? read) > maxPrefixBytes) {
          throw new BodyRewriteError(
            'model_not_found_within_limit',
            `the model was not found within the first ${maxPrefixBytes} bytes of the body`,
          );
        }
        if (outcome !== undefined) settle({ chunks, outcome, ended: false });
      } catch (error) {
        settle({ error });
      }
    };
    const onEnd = () => {
      try {
        settle({ chunks, outcome: scanner.end(), ended: true });
      } catch (error) {
        settle({ error });
      }
    };
    const onError = (error: unknown) => settle({ error });
    const onClose = () => settle({ error: prematureClose() });
    source.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
    // A source paused earlier does not start flowing just because a data listener was added.
    source.resume();
  });
}

/** `head`, then the rest of `source` with backpressure, still fed to the scanner. */
function bodyStream(head: Buffer[], scannerEnded: boolean, source: Readable, scanner: BodyScanner): Readable {
  let headSent = false;
  // A paused source still ends (or fails) once its buffer is empty, maybe before we listen again.
  let sourceEnded = scannerEnded || source.readableEnded;
  const finish = () => {
    try {
      if (!scannerEnded) scanner.end();
    } catch (error) {
      output.destroy(error as Error);
      return;
    }
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
      for (const piece of head) if (piece.length > 0) wantsMore = this.push(piece);
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
    if (!output.push(chunk)) source.pause();
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
