import type { IncomingMessage } from 'node:http';
import { ApiError } from './api-error.ts';
import { parseStrictJson, StrictJsonError } from './strict-json.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** How long a client may stay silent while it sends a request's head or a management body (node's default for the head). */
export const CLIENT_SILENCE_MS = 60_000;

/**
 * Reads the request body as exactly one JSON object.
 * Returns undefined when the request carries no body at all (length 0).
 */
export async function readJsonObjectBody(req: IncomingMessage, limit: number, idleMs = CLIENT_SILENCE_MS): Promise<Record<string, unknown> | undefined> {
  const raw = await readRawBody(req, limit, idleMs);
  if (raw.length === 0) return undefined;
  checkContentType(req.headers['content-type']);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    throw new ApiError('INVALID_JSON', { data: { reason: 'malformed', detail: 'body is not valid UTF-8' } });
  }
  let value: unknown;
  try {
    value = parseStrictJson(text);
  } catch (err) {
    if (err instanceof StrictJsonError) {
      throw new ApiError('INVALID_JSON', {
        data: err.field === undefined ? { reason: err.problem, position: err.position } : { reason: err.problem, position: err.position, field: err.field },
      });
    }
    throw err;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ApiError('INVALID_JSON', { data: { reason: 'not_an_object' } });
  }
  return value as Record<string, unknown>;
}

function checkContentType(header: string | undefined): void {
  const [type, ...params] = (header ?? '').split(';').map((s) => s.trim().toLowerCase());
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/^"|"$/g, '');
  if (type !== 'application/json' || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new ApiError('INVALID_JSON', { data: { reason: 'content_type', expected: 'application/json' } });
  }
}

async function readRawBody(req: IncomingMessage, limit: number, idleMs: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  // The server sets no whole-request deadline: a body silent this long ends its connection, as
  // a client that left would (nothing is answered to a client that sends nothing).
  const silent = () => req.destroy();
  req.setTimeout(idleMs, silent);
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw tooLarge(limit);
      chunks.push(chunk);
    }
  } finally {
    req.off('timeout', silent);
    req.socket?.setTimeout(0);
  }
  return Buffer.concat(chunks, size);
}

function tooLarge(limit: number): ApiError {
  // The rest of the body is not read; closing the connection keeps a client from streaming on.
  return new ApiError('REQUEST_TOO_LARGE', { data: { limit_bytes: limit }, headers: { Connection: 'close' } });
}
