import type { IncomingMessage } from 'node:http';
import { DataPlaneError } from './data-plane-error.ts';

/** Reads a whole (small) request body, refusing one over `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new DataPlaneError('request_too_large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new DataPlaneError('request_too_large');
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** A JSON body must be one object; anything else is refused in the client's protocol. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DataPlaneError('invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new DataPlaneError('invalid_request_body', 'The body must be a JSON object.');
  return value as Record<string, unknown>;
}
