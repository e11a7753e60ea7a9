import { failureEnvelope } from './envelope.ts';
import { ERROR_CODES, type ErrorCode } from './error-codes.ts';
import type { RequestHead } from './failed-request-head.ts';
import { pickLocale } from './i18n.ts';
import type { ParserFailure } from './parser-failure.ts';

const CODES: Readonly<Record<ParserFailure, ErrorCode>> = {
  malformed_request: 'MALFORMED_REQUEST',
  broken_body: 'MALFORMED_REQUEST',
  headers_too_large: 'REQUEST_HEADERS_TOO_LARGE',
  chunk_extensions_too_large: 'REQUEST_TOO_LARGE',
  headers_timeout: 'REQUEST_HEADERS_TIMEOUT',
};

/** A parser failure of a management request, in the failure envelope and the language its head asks for. */
export function parserFailureEnvelope(failure: ParserFailure, head: RequestHead | undefined): { status: number; body: string } {
  const code = CODES[failure];
  const locale = pickLocale(head?.headers['accept-language']);
  return { status: ERROR_CODES[code].status, body: JSON.stringify(failureEnvelope(locale, code)) };
}
