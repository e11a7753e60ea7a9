/** One SSE block as received: the parsed fields plus its exact text for verbatim pass-through. */
export interface SseEvent {
  event?: string;
  /** Data lines joined with '\n'; undefined when the block has no data field. */
  data?: string;
  id?: string;
  retry?: number;
  /** Comment lines (after ':'), e.g. keep-alive pings. */
  comments?: string[];
  /** The block's text as received, including its terminating blank line. */
  raw: string;
}

/** Fields of an event to write. Object data is JSON-encoded. */
export interface SseMessage {
  event?: string;
  data?: string | object;
  id?: string;
  retry?: number;
  comment?: string;
}
