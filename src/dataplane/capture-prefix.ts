import { Transform, type Readable } from 'node:stream';
import { watchBodySilence } from './body/watch-body-silence.ts';
import { DataPlaneError } from './data-plane-error.ts';

/**
 * Passes a request body through unchanged while keeping its first `keepBytes` (for the
 * recorded request body) and counting it against `maxBytes`. A body silent for
 * `idleTimeoutMs` fails the stream with `request_timeout`, and so what reads it (a
 * FollowedSpoolFile, for forms and raw bodies alike) and, through its reads, the upstream
 * request streaming from it, which is then called off.
 * `captured()` also tells whether the body ended: an upstream may answer before it does.
 * `readOn()` lets the rest through to nobody until the body ends, fails or passes `keepBytes`,
 * for a body refused before its reader took all of it (as receiveJsonBody reads on a refused
 * JSON body's, within its own reader).
 */
export function capturePrefix(source: Readable, keepBytes: number, maxBytes: number, idleTimeoutMs?: number): { stream: Transform; captured(): CapturedPrefix; readOn(): Promise<CapturedPrefix> } {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let total = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      total += chunk.length;
      if (total > maxBytes) return done(new DataPlaneError('request_too_large'));
      if (keptBytes < keepBytes) {
        const part = chunk.subarray(0, keepBytes - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      done(null, chunk);
    },
  });
  source.on('error', (err) => stream.destroy(err));
  // Its reader may detach before the upload ends (a FollowedSpoolFile that refused the body or
  // whose spool file failed), and a client that leaves later errors it with no one listening:
  // without a listener of its own that 'error' would crash the process. Readers see the
  // failure through `errored` and their own listeners.
  stream.on('error', ignoreError);
  source.pipe(stream);
  const silence = watchBodySilence(source, idleTimeoutMs, (error) => stream.destroy(error));
  // Counted as the bytes come off the connection, not as the reader takes them: a slower
  // reader pauses the source, and the watch does not blame the client for that.
  source.on('data', () => silence.touch());
  source.once('end', () => silence.stop());
  stream.once('close', () => silence.stop());
  const captured = (): CapturedPrefix => ({ bytes: Buffer.concat(kept), total, ended: stream.writableFinished });
  const readOn = (): Promise<CapturedPrefix> =>
    new Promise((resolve) => {
      const done = () => {
        stream.off('data', onData).off('finish', done).off('close', done);
        source.off('close', onSourceClose);
        resolve(captured());
      };
      const onData = () => total > keepBytes && done();
      // A client gone without an error leaves the stream open: its source's close says so.
      const onSourceClose = () => !source.readableEnded && done();
      if (stream.writableFinished || stream.destroyed || total > keepBytes || (source.destroyed && !source.readableEnded)) return done();
      stream.on('data', onData).once('finish', done).once('close', done);
      source.once('close', onSourceClose);
      // Its reader paused it as it let go: a 'data' listener alone would not start it again.
      stream.resume();
    });
  return { stream, captured, readOn };
}

export interface CapturedPrefix {
  /** The body's first `keepBytes`. */
  bytes: Buffer;
  /** Bytes counted so far: the body's size once it ended (every byte went through the stream: `writableFinished`). */
  total: number;
  ended: boolean;
}

function ignoreError(): void {}
