import type { ParserFailure } from '../http/parser-failure.ts';
import { DataPlaneError } from './data-plane-error.ts';

const ERRORS: Readonly<Record<ParserFailure, () => DataPlaneError>> = {
  malformed_request: () => new DataPlaneError('malformed_request'),
  broken_body: () => new DataPlaneError('invalid_request_body', 'Its framing is broken.'),
  headers_too_large: () => new DataPlaneError('request_headers_too_large'),
  chunk_extensions_too_large: () => new DataPlaneError('request_too_large', 'Its chunk extensions are too large.'),
  headers_timeout: () => new DataPlaneError('request_headers_timeout'),
};

/**
 * What node's parser refused, as the data plane names it: in the answer written for it
 * (src/server/answer-client-errors.ts) and, for a body refused once its handler ran, in that
 * request's record (brokenBodyFraming) alike.
 */
export function parserFailureError(failure: ParserFailure): DataPlaneError {
  return ERRORS[failure]();
}
