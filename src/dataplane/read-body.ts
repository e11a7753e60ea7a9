import type { IncomingMessage } from 'node:http';
import { RefusedBodyPrefix } from './body/refused-body-prefix.ts';
import { watchBodySilence } from './body/watch-body-silence.ts';
import { DataPlaneError } from './data-plane-error.ts';

/**
 * Reads a whole (small) request body, refusing one over `limit` bytes, and resolves with what
 * `finish` makes of it (a throw rejects). Plain 'data' events:
 * an async iterator costs a stream wrapper per request on the hot path. A body silent for
 * `idleTimeoutMs` is refused (`request_timeout`). With `keepCutShort`, a body that did not all
 * arrive rejects with a RefusedBodyPrefix holding what did, for a key that records bodies.
 */
export function readBody<T>(req: IncomingMessage, limit: number, finish: (raw: Buffer) => T, idleTimeoutMs?: number, keepCutShort = false): Promise<T> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new DataPlaneError('request_too_large'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      silence.touch();
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      cleanup();
      req.resume();
      reject(cutShort(new DataPlaneError('request_too_large'), keepCutShort, chunks, size));
    };
    // The listeners stay after the end: only 'close' can follow, which onGone ignores once the
    // body ended, and removing four listeners on every request cost more than leaving them.
    // What the caller makes of the body is done here, so that it costs no promise of its own.
    const onEnd = () => {
      silence.stop();
      try {
        resolve(finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
      } catch (err) {
        reject(err);
      }
    };
    // The request stream fails or closes early only when the client's connection does.
    const onGone = () => {
      if (req.readableEnded) return;
      cleanup();
      reject(cutShort(new DataPlaneError('client_closed', 'Its body had not ended.'), keepCutShort, chunks, size));
    };
    const cleanup = () => {
      silence.stop();
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
    };
    const silence = watchBodySilence(req, idleTimeoutMs, (error) => {
      cleanup();
      req.resume();
      reject(cutShort(error, keepCutShort, chunks, size));
    });
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone);
  });
}

/** A module function, not a closure: the hot path makes none for a failure it rarely has. */
function cutShort(error: DataPlaneError, keep: boolean, chunks: Buffer[], size: number): Error {
  return keep ? new RefusedBodyPrefix(error, Buffer.concat(chunks), size) : error;
}

/** A JSON body (decoded) must be one object; anything else is refused in the client's protocol. */
export function parseJsonText(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DataPlaneError('invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new DataPlaneError('invalid_request_body', 'The body must be a JSON object.');
  return value as Record<string, unknown>;
}
