import { emptyUsage } from '../usage/index.ts';
import type { LogRecord } from '../store/logs/index.ts';

/** A log record filled in as the request goes; every request writes exactly one. */
export function newLogDraft(requestId: string, startedAt: number): LogRecord {
  return {
    request_id: requestId,
    created_at: startedAt,
    access_key_id: null,
    group_id: null,
    channel: null,
    credential_id: null,
    protocol: '',
    operation: '',
    route_mode: null,
    effective: null,
    external_model: null,
    upstream_model: null,
    status: 0,
    error_code: null,
    attempt_count: 0,
    attempts: [],
    client_aborted: false,
    timings: { started_at: startedAt, ttfb_ms: null, duration_ms: 0 },
    usage: emptyUsage(),
    cost: 0,
    currency: 'USD',
  };
}
