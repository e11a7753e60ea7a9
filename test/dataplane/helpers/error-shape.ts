import type { Test } from 'tap';

/** decisions.md §6: the error shapes the SDKs parse. */
export type Style = 'completions' | 'messages' | 'generate';

const GENERATE_STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 405: 'INVALID_ARGUMENT', 429: 'RESOURCE_EXHAUSTED', 503: 'UNAVAILABLE' };
// Each vendor's own words: OpenAI names its 5xx `server_error`, Anthropic `api_error`, or `overloaded_error` when it is overloaded.
const COMPLETIONS_TYPE: Record<number, string> = { 400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 405: 'invalid_request_error', 429: 'rate_limit_error', 503: 'server_error' };
const MESSAGES_TYPE: Record<number, string> = { 400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 405: 'invalid_request_error', 429: 'rate_limit_error', 503: 'overloaded_error' };

/** A gateway refusal in `style`'s shape, with its status's type words and the reason `code` (and `message`, when given). */
export function checkErrorShape(t: Test, body: unknown, style: Style, status: number, code: string, message?: RegExp): void {
  if (style === 'completions') {
    t.match(body, { error: { code, type: COMPLETIONS_TYPE[status], message: String } }, 'completions-style error');
    // The messages shape has these members too: its top-level `type` tells them apart.
    t.notOk((body as { type?: unknown }).type, 'not the messages shape');
    if (message) t.match((body as { error?: { message?: string } }).error?.message, message);
  } else if (style === 'messages') {
    // A top-level request_id, as the vendor's error bodies carry.
    t.match(body, { type: 'error', error: { code, type: MESSAGES_TYPE[status], message: String }, request_id: String }, 'messages-style error');
    if (message) t.match((body as { error?: { message?: string } }).error?.message, message);
  } else {
    t.match(body, { error: { code: status, status: GENERATE_STATUS[status], message: String, details: [{ reason: code }] } }, 'generate-style error');
    if (message) t.match((body as { error?: { message?: string } }).error?.message, message);
  }
}
