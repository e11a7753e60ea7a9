/**
 * Orders values as SQLite's ORDER BY does with the BINARY collation: NULL first, then numbers,
 * then text by UTF-8 bytes (code point order). Rows merged in JavaScript keep the order the
 * former all-SQL reads returned.
 */
export function compareSqlValues(a: string | number | null | undefined, b: string | number | null | undefined): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return compareCodePoints(a, b);
  return 0;
}

function rank(value: string | number | null | undefined): number {
  return value === null || value === undefined ? 0 : typeof value === 'number' ? 1 : 2;
}

function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; ) {
    const ca = a.codePointAt(i)!;
    const cb = b.codePointAt(i)!;
    if (ca !== cb) return ca - cb;
    i += ca > 0xffff ? 2 : 1;
  }
  return a.length - b.length;
}
