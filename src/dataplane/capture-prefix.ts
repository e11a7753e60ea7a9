import { Transform, type Readable } from 'node:stream';
import { DataPlaneError } from './data-plane-error.ts';

/**
 * Passes a request body through unchanged while keeping its first `keepBytes` (for the
 * recorded request body) and counting it against `maxBytes`.
 */
export function capturePrefix(source: Readable, keepBytes: number, maxBytes: number): { stream: Transform; captured(): { bytes: Buffer; total: number } } {
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
  // Its readers come and go (a form's rewriter detaches before the upload ends), and a client
  // that leaves later errors it with no one listening: without a listener of its own that
  // 'error' would crash the process. Readers see the failure through `errored` and their own listeners.
  stream.on('error', ignoreError);
  source.pipe(stream);
  return { stream, captured: () => ({ bytes: Buffer.concat(kept), total }) };
}

function ignoreError(): void {}
