import type { TokenUsage } from '../../usage/token-usage.ts';

export type RouteMode = 'N' | 'C' | 'N/C' | 'N*';
export type EffectiveMode = 'native' | 'converted';

/** One upstream try of a request (failover produces several). */
export interface AttemptRecord {
  credential_id: string | null;
  group_id: string | null;
  /** HTTP status the upstream answered; null when no answer came (connection failure). */
  status: number | null;
  error_code: string | null;
}

export interface RequestTimings {
  /** Epoch ms when the request arrived. */
  started_at: number;
  /**
   * Time to the first byte of the upstream's answer sent to the client, its status line included
   * (a stream's headers sent ahead of its first event count); null when none was sent, as when
   * the client got only the gateway's own error.
   */
  ttfb_ms: number | null;
  duration_ms: number;
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface RecordedRequestBody {
  /** `dropped`: the body was not stored (its text left empty), to bound the memory of records waiting while writes failed. */
  state: 'recorded' | 'truncated' | 'dropped';
  original_bytes: number;
  /**
   * The original body as sent: its text when it is valid UTF-8, else base64 (`encoding`). A
   * parsed JSON value only in records stored before bodies were kept as sent.
   */
  body: string | JsonValue;
  /** Present when `body` is the base64 of bytes that are not UTF-8 text (a binary upload, a form with files). */
  encoding?: 'base64';
}

/** One request-log record. Ids of groups and credentials are stored as strings. */
export interface LogRecord {
  request_id: string;
  /** Epoch ms; the list order and time filters use it. */
  created_at: number;
  access_key_id: number | null;
  group_id: string | null;
  channel: string | null;
  credential_id: string | null;
  protocol: string;
  operation: string;
  route_mode: RouteMode | null;
  effective: EffectiveMode | null;
  external_model: string | null;
  upstream_model: string | null;
  /** HTTP status returned to the client. */
  status: number;
  error_code: string | null;
  attempt_count: number;
  attempts: AttemptRecord[];
  client_aborted: boolean;
  timings: RequestTimings;
  usage: TokenUsage;
  cost: number;
  currency: 'USD';
  request_body?: RecordedRequestBody;
}

/** A list entry: the record without its body, and whether one is stored. */
export type LogListItem = Omit<LogRecord, 'request_body'> & { has_request_body: boolean };
