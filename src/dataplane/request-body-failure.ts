import { BodyRewriteError } from './body/index.ts';
import { DataPlaneError } from './data-plane-error.ts';

/**
 * The client's fault in a request body that failed while it streamed: over the size limit,
 * not JSON, a broken form. Undefined for anything else (the client's connection went away).
 */
export function requestBodyFailure(error: unknown): DataPlaneError | undefined {
  if (error instanceof DataPlaneError) return error;
  if (error instanceof BodyRewriteError) return new DataPlaneError(error.code === 'invalid_json' ? 'invalid_json' : 'invalid_request_body', error.message);
  return undefined;
}
