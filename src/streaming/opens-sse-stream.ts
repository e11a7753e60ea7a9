import { UTF8_BOM } from './without-bom.ts';

/** How an event stream's first line starts: a field the relay reads or passes on, or a comment. */
const FIRST_LINE_STARTS = ['data:', 'event:', 'id:', 'retry:', ':'].map((s) => Buffer.from(s));

/**
 * Whether a body's first bytes open an event stream: past a BOM and whitespace, a `data`,
 * `event`, `id` or `retry` field or a comment. Undefined while they are too few to tell (a
 * body of whitespace so far, or the start of a field name).
 */
export function opensSseStream(bytes: Buffer): boolean | undefined {
  let at = 0;
  while (at < UTF8_BOM.length && at < bytes.length && bytes[at] === UTF8_BOM[at]) at++;
  if (at === bytes.length) return undefined;
  if (at < UTF8_BOM.length) at = 0;
  while (at < bytes.length && isSpace(bytes[at]!)) at++;
  if (at === bytes.length) return undefined;
  const rest = bytes.length - at;
  let undecided = false;
  for (const start of FIRST_LINE_STARTS) {
    const n = Math.min(start.length, rest);
    if (bytes.compare(start, 0, n, at, at + n) !== 0) continue;
    if (n === start.length) return true;
    undecided = true;
  }
  return undecided ? undefined : false;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
