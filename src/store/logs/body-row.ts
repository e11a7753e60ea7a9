import type { JsonValue, RecordedRequestBody } from './log-record.ts';

/** A request_bodies row as read back. */
export interface BodyRow {
  request_id: string;
  state: string;
  original_bytes: number;
  body: string;
  is_json: number;
}

/** A request_bodies row as positional values, in the insert's column order (its batch id is added by the writer). */
export type BodyRowValues = [request_id: string, state: string, original_bytes: number, body: string, is_json: number];

/**
 * How `body` is stored, in the `is_json` column (named when it had only the first two): text,
 * a parsed JSON value (records from before bodies were kept as sent), or base64.
 */
const STORED_TEXT = 0;
const STORED_JSON = 1;
const STORED_BASE64 = 2;

export function encodeBody(requestId: string, body: RecordedRequestBody): BodyRowValues {
  if (typeof body.body !== 'string') return [requestId, body.state, body.original_bytes, JSON.stringify(body.body), STORED_JSON];
  return [requestId, body.state, body.original_bytes, body.body, body.encoding === 'base64' ? STORED_BASE64 : STORED_TEXT];
}

/** A body's row once its text was dropped to bound the memory of records waiting to be written: the record keeps saying how long it was. */
export function droppedBody(row: BodyRowValues): BodyRowValues {
  return [row[0], 'dropped', row[2], '', STORED_TEXT];
}

export function fromBodyRow(row: BodyRow): RecordedRequestBody {
  const recorded: RecordedRequestBody = {
    state: row.state as RecordedRequestBody['state'],
    original_bytes: row.original_bytes,
    body: row.is_json === STORED_JSON ? (JSON.parse(row.body) as JsonValue) : row.body,
  };
  if (row.is_json === STORED_BASE64) recorded.encoding = 'base64';
  return recorded;
}
