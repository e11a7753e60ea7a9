import type { IncomingMessage } from 'node:http';
import type { OperationEntry } from '../generated/index.ts';
import type { RecordedRequestBody } from '../store/logs/index.ts';
import type { ForwardBody } from './forward-native.ts';
import { parseJsonObject, readBody } from './read-body.ts';

export interface PreparedBody {
  body: ForwardBody;
  /** Parsed JSON (or the small text fields of a form) for the model and routing features. */
  fields: Record<string, unknown> | undefined;
  recorded: RecordedRequestBody | undefined;
}

/** Reads what the operation's body kind needs to route the request; records it when asked. */
export async function prepareRequestBody(req: IncomingMessage, op: OperationEntry, record: boolean, maxBodyBytes: number): Promise<PreparedBody> {
  const contentType = String(req.headers['content-type'] ?? '');
  if (op.body === 'none' || op.body === 'websocket' || req.method === 'GET' || req.method === 'HEAD') return { body: { kind: 'none' }, fields: undefined, recorded: undefined };
  const raw = await readBody(req, maxBodyBytes);
  if (raw.length === 0) return { body: { kind: 'none' }, fields: undefined, recorded: undefined };
  if (op.body === 'json' || contentType.includes('json')) {
    const value = parseJsonObject(raw);
    return { body: { kind: 'json', value }, fields: value, recorded: record ? { state: 'recorded', original_bytes: raw.length, body: value as RecordedRequestBody['body'] } : undefined };
  }
  return {
    body: { kind: 'stream', open: async () => ({ stream: (await import('node:stream')).Readable.from([raw]), length: raw.length }) },
    fields: undefined,
    recorded: record ? { state: 'recorded', original_bytes: raw.length, body: raw.toString('latin1') } : undefined,
  };
}
