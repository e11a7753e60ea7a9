import type { StreamErrorStyle } from './stream-error-event.ts';

/** What the log record says of a stream whose upstream sent its own error event. */
export const UPSTREAM_STREAM_ERROR = 'upstream_stream_error';

/**
 * One stream style's error events, as the upstream sends them. `in` says where the raw name
 * stands: the value of the event data's `type` member, or the name of a top-level member of
 * the data (whose value is not null).
 */
export interface UpstreamStreamErrorRow {
  style: StreamErrorStyle;
  in: 'type' | 'member';
  raw: readonly string[];
  unified: typeof UPSTREAM_STREAM_ERROR;
}

/**
 * Responses' `response.incomplete` is not among them: the answer ended early on purpose (token
 * limit, content filter) and the client got what it asked for.
 */
export const upstreamStreamErrors: readonly UpstreamStreamErrorRow[] = [
  { style: 'completions', in: 'member', raw: ['error'], unified: UPSTREAM_STREAM_ERROR },
  { style: 'responses', in: 'type', raw: ['response.failed', 'error'], unified: UPSTREAM_STREAM_ERROR },
  { style: 'messages', in: 'type', raw: ['error'], unified: UPSTREAM_STREAM_ERROR },
  { style: 'generate', in: 'member', raw: ['error'], unified: UPSTREAM_STREAM_ERROR },
];
