import type { LogRecord } from '../../../src/store/log-store.ts';

/** A complete request-log record as the data plane writes it, with the given fields changed. */
export function logRecord(overrides: Partial<LogRecord> & Pick<LogRecord, 'request_id'>): LogRecord {
  return {
    created_at: Date.parse('2026-03-02T09:00:00.000Z'),
    access_key_id: 1,
    group_id: '1',
    channel: 'ch02',
    credential_id: '1',
    protocol: 'x-completions',
    operation: 'chat-completions',
    route_mode: 'N',
    effective: 'native',
    external_model: 'chat-model',
    upstream_model: 'chat-model',
    status: 200,
    error_code: null,
    attempt_count: 1,
    attempts: [{ credential_id: '1', group_id: '1', status: 200, error_code: null }],
    client_aborted: false,
    timings: { started_at: Date.parse('2026-03-02T09:00:00.000Z'), ttfb_ms: 50, duration_ms: 120 },
    usage: { input_tokens: 10, output_tokens: 5, cached_tokens: 0, reasoning_tokens: 0 },
    cost: 0.001,
    currency: 'USD',
    ...overrides,
  };
}
