import { ApiError } from '../http/api-error.ts';

const TIMEOUT_MS = 15_000;
const MAX_BYTES = 5 * 1024 * 1024;

/** GETs a JSON document from a configured remote source; any failure is 502 BAD_GATEWAY naming why. */
export async function fetchJson(fetchImpl: typeof fetch, url: string): Promise<unknown> {
  let text: string;
  try {
    const res = await fetchImpl(url, { signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: 'application/json' } });
    if (!res.ok) throw new ApiError('BAD_GATEWAY', { data: { reason: 'remote_status', status: res.status, url } });
    text = await res.text();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('BAD_GATEWAY', { data: { reason: 'remote_unreachable', url }, cause: err });
  }
  if (Buffer.byteLength(text) > MAX_BYTES) throw new ApiError('BAD_GATEWAY', { data: { reason: 'remote_too_large', url } });
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('BAD_GATEWAY', { data: { reason: 'remote_not_json', url } });
  }
}
