import type { TokenUsage } from '../../usage/token-usage.ts';
import type { AttemptRecord, JsonValue, LogListItem, LogRecord, RecordedRequestBody, RequestTimings } from './log-record.ts';

/** Column values of request_logs, named as the columns: the record flattened, its enums and flags as stored. */
export type LogRow = Omit<LogRecord, 'route_mode' | 'effective' | 'attempts' | 'client_aborted' | 'timings' | 'usage' | 'currency' | 'request_body'> &
  RequestTimings &
  TokenUsage & {
    seq?: number;
    route_mode: string | null;
    effective: string | null;
    /** JSON text of AttemptRecord[]. */
    attempts: string;
    client_aborted: number;
    currency: string;
  };

export interface BodyRow {
  request_id: string;
  state: string;
  original_bytes: number;
  body: string;
  is_json: number;
}

/** The columns a record is written to, in the order of `LogRowValues`. */
export const LOG_COLUMNS = [
  'request_id', 'created_at', 'access_key_id', 'group_id', 'channel', 'credential_id', 'protocol', 'operation',
  'route_mode', 'effective', 'external_model', 'upstream_model', 'status', 'error_code', 'attempt_count', 'attempts',
  'client_aborted', 'started_at', 'ttfb_ms', 'duration_ms', 'input_tokens', 'output_tokens', 'cached_tokens',
  'reasoning_tokens', 'cost', 'currency',
] as const satisfies ReadonlyArray<keyof LogRow>;

export const BODY_COLUMNS = ['request_id', 'state', 'original_bytes', 'body', 'is_json'] as const satisfies ReadonlyArray<keyof BodyRow>;

/** A request_logs row as positional values, in LOG_COLUMNS order. */
export type LogRowValues = Array<string | number | null>;
/** A request_bodies row as positional values, in BODY_COLUMNS order. */
export type BodyRowValues = [request_id: string, state: string, original_bytes: number, body: string, is_json: number];

/**
 * A record as it is written: flat arrays of primitives. Encoded when it is appended, so a
 * buffered record holds no object graph (cheap to copy to the log writer's thread, and no
 * work for the garbage collector while it waits), and binds to the insert by position.
 */
export type EncodedLogRecord = [row: LogRowValues, body?: BodyRowValues];

export function encodeLogRecord(record: LogRecord): EncodedLogRecord {
  const { timings, usage } = record;
  const row: LogRowValues = [
    record.request_id,
    Math.trunc(record.created_at),
    record.access_key_id,
    record.group_id,
    record.channel,
    record.credential_id,
    record.protocol,
    record.operation,
    record.route_mode,
    record.effective,
    record.external_model,
    record.upstream_model,
    record.status,
    record.error_code,
    record.attempt_count,
    JSON.stringify(record.attempts),
    record.client_aborted ? 1 : 0,
    Math.trunc(timings.started_at),
    timings.ttfb_ms === null ? null : Math.round(timings.ttfb_ms),
    Math.round(timings.duration_ms),
    usage.input_tokens,
    usage.output_tokens,
    usage.cached_tokens,
    usage.reasoning_tokens,
    record.cost,
    record.currency,
  ];
  return record.request_body === undefined ? [row] : [row, encodeBody(record.request_id, record.request_body)];
}

function encodeBody(requestId: string, body: RecordedRequestBody): BodyRowValues {
  const isJson = typeof body.body !== 'string';
  return [requestId, body.state, body.original_bytes, isJson ? JSON.stringify(body.body) : (body.body as string), isJson ? 1 : 0];
}

export function fromLogRow(row: LogRow): Omit<LogRecord, 'request_body'> {
  return {
    request_id: row.request_id,
    created_at: row.created_at,
    access_key_id: row.access_key_id,
    group_id: row.group_id,
    channel: row.channel,
    credential_id: row.credential_id,
    protocol: row.protocol,
    operation: row.operation,
    route_mode: row.route_mode as LogRecord['route_mode'],
    effective: row.effective as LogRecord['effective'],
    external_model: row.external_model,
    upstream_model: row.upstream_model,
    status: row.status,
    error_code: row.error_code,
    attempt_count: row.attempt_count,
    attempts: JSON.parse(row.attempts) as AttemptRecord[],
    client_aborted: row.client_aborted === 1,
    timings: { started_at: row.started_at, ttfb_ms: row.ttfb_ms, duration_ms: row.duration_ms },
    usage: {
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      cached_tokens: row.cached_tokens,
      reasoning_tokens: row.reasoning_tokens,
    },
    cost: row.cost,
    currency: 'USD',
  };
}

export function fromListRow(row: LogRow & { has_request_body: number }): LogListItem {
  return { ...fromLogRow(row), has_request_body: row.has_request_body === 1 };
}

export function fromBodyRow(row: BodyRow): RecordedRequestBody {
  return {
    state: row.state as RecordedRequestBody['state'],
    original_bytes: row.original_bytes,
    body: row.is_json === 1 ? (JSON.parse(row.body) as JsonValue) : row.body,
  };
}
