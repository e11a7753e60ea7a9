/**
 * Top-level members (or form fields) routing reads: request-features.ts, and
 * handle-data-request.ts's previous_response_id and background. Small values.
 */
export const ROUTING_SMALL_MEMBERS: readonly string[] = ['stream', 'n', 'response_format', 'previous_response_id', 'conversation', 'background'];
/** Members whose kind routing reads (text, token ids, other); their values may be large. */
export const ROUTING_INPUT_MEMBERS: readonly string[] = ['input', 'query', 'documents'];
