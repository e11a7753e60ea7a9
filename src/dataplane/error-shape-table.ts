import type { FailureVocabulary } from '../streaming/index.ts';

/**
 * How each protocol's SDKs name an HTTP error status, so that they raise the typed error
 * they raise for their own vendor (decisions.md §6). Keyed by status; `default` for others.
 * An error event inside a stream takes its words from here too, by the status the same
 * failure is answered with before the stream's first byte.
 */
const ERROR_SHAPE_TABLE: Record<number | 'default', FailureVocabulary> = {
  400: { completions: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  401: { completions: 'authentication_error', messages: 'authentication_error', generate: 'UNAUTHENTICATED' },
  403: { completions: 'permission_error', messages: 'permission_error', generate: 'PERMISSION_DENIED' },
  404: { completions: 'not_found_error', messages: 'not_found_error', generate: 'NOT_FOUND' },
  405: { completions: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  // The client's own body went silent: named as the SDKs name a timeout (openai's has no such type).
  408: { completions: 'invalid_request_error', messages: 'timeout_error', generate: 'DEADLINE_EXCEEDED' },
  413: { completions: 'invalid_request_error', messages: 'request_too_large', generate: 'INVALID_ARGUMENT' },
  415: { completions: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  // Headers over node's limit (src/http/parser-failure.ts): the client's request, not a failure of the gateway.
  431: { completions: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  429: { completions: 'rate_limit_error', messages: 'rate_limit_error', generate: 'RESOURCE_EXHAUSTED' },
  // OpenAI's word for its own 5xx (`api_error` is the messages vendor's).
  501: { completions: 'server_error', messages: 'api_error', generate: 'UNIMPLEMENTED' },
  502: { completions: 'server_error', messages: 'api_error', generate: 'UNAVAILABLE' },
  503: { completions: 'server_error', messages: 'overloaded_error', generate: 'UNAVAILABLE' },
  504: { completions: 'server_error', messages: 'timeout_error', generate: 'DEADLINE_EXCEEDED' },
  default: { completions: 'server_error', messages: 'api_error', generate: 'INTERNAL' },
};

/** The table's row for `status`: the one lookup for HTTP answers and stream error events alike. */
export function errorShapeOf(status: number): FailureVocabulary {
  return ERROR_SHAPE_TABLE[status] ?? ERROR_SHAPE_TABLE.default;
}
