import type { CompiledRoute } from '../handlers/compile-route-table.ts';
import { matchRoute } from '../handlers/compile-route-table.ts';
import type { RequestHead } from '../http/failed-request-head.ts';
import type { ParserFailure } from '../http/parser-failure.ts';
import { DataPlaneError } from './data-plane-error.ts';
import { errorStyleOfMatch } from './error-style-choice.ts';
import { presentedAccessKey } from './present-access-key.ts';
import { renderErrorBody } from './render-error-body.ts';
import { brokenFramingError } from './request-body-failure.ts';
import { splitTarget } from './split-request-target.ts';

const ERRORS: Readonly<Record<ParserFailure, () => DataPlaneError>> = {
  malformed_request: () => new DataPlaneError('malformed_request'),
  // As the request's record says (its handler ran): brokenBodyFraming.
  broken_body: brokenFramingError,
  headers_too_large: () => new DataPlaneError('request_headers_too_large'),
  chunk_extensions_too_large: () => new DataPlaneError('request_too_large', 'Its chunk extensions are too large.'),
  headers_timeout: () => new DataPlaneError('request_headers_timeout'),
};

/**
 * A parser failure of a data-plane request, in the error shape its head chooses as a refusal
 * before the route's checks does (the route's, else as for a path no endpoint takes), or the
 * completions shape when nothing of its head can be read. No record is kept of it, so it names
 * no request id.
 */
export function parserFailureAnswer(routes: readonly CompiledRoute[], failure: ParserFailure, head: RequestHead | undefined): { status: number; body: string } {
  const error = ERRORS[failure]();
  let style: ReturnType<typeof errorStyleOfMatch> = 'completions';
  if (head !== undefined) {
    const { path, search = '' } = splitTarget({ url: head.target });
    const presented = presentedAccessKey(head.headers, new URLSearchParams(search.slice(1)));
    style = errorStyleOfMatch(matchRoute(routes, head.method, path), head.headers, path, presented?.from);
  }
  return { status: error.status, body: renderErrorBody(style, error.status, error.code, error.message, null) };
}
