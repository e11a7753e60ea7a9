import type { IncomingMessage } from 'node:http';
import type { OperationEntry } from '../generated/index.ts';
import type { RecordedRequestBody } from '../store/logs/index.ts';
import { BodyRewriteError, rewriteJsonModelStream, rewriteMultipartModelStream, type ModelRewrite } from './body/index.ts';
import { capturePrefix } from './capture-prefix.ts';
import { DataPlaneError } from './data-plane-error.ts';
import type { ForwardBody } from './forward-native.ts';
import { parseJsonObject, readBody } from './read-body.ts';

export interface PreparedBody {
  body: ForwardBody;
  /** Parsed JSON (or the small text fields of a form) for the model and routing features. */
  fields: Record<string, unknown> | undefined;
  /** Filled in once the body has been sent (a streamed body is only known then). */
  recorded(): RecordedRequestBody | undefined;
}

export interface BodyLimits {
  maxBodyBytes: number;
  /** JSON bodies up to this size are parsed whole (and can be replayed on failover). */
  bufferedJsonBytes: number;
}

const NO_BODY: PreparedBody = { body: { kind: 'none' }, fields: undefined, recorded: () => undefined };
/** How much of a streamed body is kept when the key records request bodies. */
const RECORD_PREFIX_BYTES = 1024 * 1024;

/**
 * Reads what the operation's body kind needs to route the request. Small JSON is parsed
 * whole; large JSON and multipart bodies stream through with only the model rewritten, so
 * an upload is never held in memory whole.
 */
export async function prepareRequestBody(req: IncomingMessage, op: OperationEntry, record: boolean, limits: BodyLimits): Promise<PreparedBody> {
  if (op.body === 'none' || op.body === 'websocket' || req.method === 'GET' || req.method === 'HEAD') return NO_BODY;
  const contentType = String(req.headers['content-type'] ?? '');
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (declared !== undefined && declared > limits.maxBodyBytes) throw new DataPlaneError('request_too_large');
  const multipart = contentType.toLowerCase().startsWith('multipart/form-data');
  if (!multipart && declared !== undefined && declared <= limits.bufferedJsonBytes) {
    const raw = await readBody(req, limits.bufferedJsonBytes);
    if (raw.length === 0) return NO_BODY;
    const value = parseJsonObject(raw);
    const recorded: RecordedRequestBody | undefined = record ? { state: 'recorded', original_bytes: raw.length, body: value as RecordedRequestBody['body'] } : undefined;
    return { body: { kind: 'json', raw, value }, fields: value, recorded: () => recorded };
  }
  const tee = capturePrefix(req, record ? RECORD_PREFIX_BYTES : 0, limits.maxBodyBytes);
  let rewrite: ModelRewrite & { fields?: ReadonlyMap<string, string> };
  try {
    rewrite = multipart
      ? await rewriteMultipartModelStream(tee.stream, { contentType, maxPrefixBytes: limits.bufferedJsonBytes * 8 })
      : await rewriteJsonModelStream(tee.stream, { maxPrefixBytes: limits.bufferedJsonBytes });
  } catch (err) {
    tee.stream.destroy();
    req.resume();
    if (err instanceof BodyRewriteError) throw new DataPlaneError(err.code === 'invalid_json' ? 'invalid_json' : 'invalid_request_body', err.message);
    throw err;
  }
  const fields: Record<string, unknown> = Object.fromEntries(rewrite.fields ?? []);
  if (rewrite.model !== undefined) fields['model'] = rewrite.model;
  return {
    body: {
      kind: 'stream',
      open: async (upstreamModel) => {
        const out = rewrite.replaceModel(upstreamModel ?? rewrite.model ?? '');
        return declared === undefined ? { stream: out.body } : { stream: out.body, length: declared + out.lengthDelta };
      },
    },
    fields,
    recorded: () => {
      if (!record) return undefined;
      const { bytes, total } = tee.captured();
      const text = bytes.toString(multipart ? 'latin1' : 'utf8');
      return { state: bytes.length < total ? 'truncated' : 'recorded', original_bytes: total, body: text };
    },
  };
}
