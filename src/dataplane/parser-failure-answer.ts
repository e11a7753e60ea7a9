import type { CompiledRoute } from '../handlers/compile-route-table.ts';
import { matchRoute } from '../handlers/compile-route-table.ts';
import type { RequestHead } from '../http/failed-request-head.ts';
import type { ParserFailure } from '../http/parser-failure.ts';
import type { ParserFailureReply } from '../server/answer-client-errors.ts';
import { errorStyleOfMatch } from './error-style-choice.ts';
import { parserFailureError } from './parser-failure-error.ts';
import { presentedAccessKey } from './present-access-key.ts';
import { renderErrorBody } from './render-error-body.ts';
import { withRequestId } from './request-id-headers.ts';
import { splitTarget } from './split-request-target.ts';

/**
 * A parser failure of a data-plane request, in the error shape its head chooses as a refusal
 * before the route's checks does (the route's, else as for a path no endpoint takes), or the
 * completions shape when nothing of its head can be read. Only a body refused once its handler
 * ran has a record (`requestId`, its id), which the answer names as any answer of the data plane
 * does; the others name no request id.
 */
export function parserFailureAnswer(routes: readonly CompiledRoute[], failure: ParserFailure, head: RequestHead | undefined, requestId: string | undefined): ParserFailureReply {
  const error = parserFailureError(failure);
  let style: ReturnType<typeof errorStyleOfMatch> = 'completions';
  if (head !== undefined) {
    const { path, search = '' } = splitTarget({ url: head.target });
    const presented = presentedAccessKey(head.headers, new URLSearchParams(search.slice(1)));
    style = errorStyleOfMatch(matchRoute(routes, head.method, path), head.headers, path, presented?.from);
  }
  const body = renderErrorBody(style, error.status, error.code, error.message, requestId ?? null);
  const headers: Record<string, string> = {};
  if (requestId !== undefined) withRequestId(headers, requestId, style === 'messages');
  return { status: error.status, body, headers };
}
