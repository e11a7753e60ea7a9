import type { AttemptRecord, JsonValue, LogListItem, LogRecord, RecordedRequestBody } from './log-record.ts';

/** Column values of request_logs, named as the columns. */
export interface LogRow {
  seq?: number;
  request_id: string;
  created_at: number;
  access_key_id: number | null;
  group_id: string | null;
  channel: string | null;
  credential_id: string | null;
  protocol: string;
  operation: string;
  route_mode: string | null;
  effective: string | null;
  external_model: string | null;
  upstream_model: string | null;
  status: number;
  error_code: string | null;
  attempt_count: number;
  attempts: string;
  client_aborted: number;
  started_at: number;
  ttfb_ms: number | null;
  duration_ms: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost: number;
  currency: string;
}

export interface BodyRow {
  request_id: string;
  state: string;
  original_bytes: number;
  body: string;
  is_json: number;
}

export function toLogRow(record: LogRecord): LogRow {
  return {
    request_id: record.request_id,
    created_at: Math.trunc(record.created_at),
    access_key_id: record.access_key_id,
    group_id: record.group_id,
    channel: record.channel,
    credential_id: record.credential_id,
    protocol: record.protocol,
    operation: record.operation,
    route_mode: record.route_mode,
    effective: record.effective,
    external_model: record.external_model,
    upstream_model: record.upstream_model,
    status: record.status,
    error_code: record.error_code,
    attempt_count: record.attempt_count,
    attempts: JSON.stringify(record.attempts),
    client_aborted: record.client_aborted ? 1 : 0,
    started_at: Math.trunc(record.timings.started_at),
    ttfb_ms: record.timings.ttfb_ms === null ? null : Math.round(record.timings.ttfb_ms),
    duration_ms: Math.round(record.timings.duration_ms),
    input_tokens: record.usage.input_tokens,
    output_tokens: record.usage.output_tokens,
    cached_tokens: record.usage.cached_tokens,
    reasoning_tokens: record.usage.reasoning_tokens,
    cost: record.cost,
    currency: record.currency,
  };
}

export function toBodyRow(requestId: string, body: RecordedRequestBody): BodyRow {
  const isJson = typeof body.body !== 'string';
  return {
    request_id: requestId,
    state: body.state,
    original_bytes: body.original_bytes,
    body: isJson ? JSON.stringify(body.body) : (body.body as string),
    is_json: isJson ? 1 : 0,
  };
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
