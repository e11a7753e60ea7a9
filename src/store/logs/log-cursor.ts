/** Position after the last item of a page: its created_at and seq, opaque to clients. */
export interface LogCursor {
  created_at: number;
  seq: number;
}

export function encodeCursor(cursor: LogCursor): string {
  return Buffer.from(`${cursor.created_at}.${cursor.seq}`).toString('base64url');
}

/**
 * Undefined for anything that is not a cursor this store produced: only text that `encodeCursor`
 * gives back exactly, so that other spellings of the same bytes (standard base64, padding,
 * leading zeros) and numbers past the safe integers (rounded, or Infinity) are refused.
 */
export function decodeCursor(text: string): LogCursor | undefined {
  const match = /^(\d+)\.(\d+)$/.exec(Buffer.from(text, 'base64url').toString());
  if (match === null) return undefined;
  const cursor = { created_at: Number(match[1]), seq: Number(match[2]) };
  if (!Number.isSafeInteger(cursor.created_at) || !Number.isSafeInteger(cursor.seq)) return undefined;
  return encodeCursor(cursor) === text ? cursor : undefined;
}
