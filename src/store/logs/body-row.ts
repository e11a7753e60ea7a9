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

export function encodeBody(requestId: string, body: RecordedRequestBody): BodyRowValues {
  const isJson = typeof body.body !== 'string';
  return [requestId, body.state, body.original_bytes, isJson ? JSON.stringify(body.body) : (body.body as string), isJson ? 1 : 0];
}

export function fromBodyRow(row: BodyRow): RecordedRequestBody {
  return {
    state: row.state as RecordedRequestBody['state'],
    original_bytes: row.original_bytes,
    body: row.is_json === 1 ? (JSON.parse(row.body) as JsonValue) : row.body,
  };
}
