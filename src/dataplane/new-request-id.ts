import { randomFillSync } from 'node:crypto';

const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Random bytes drawn in bulk: one call into the generator per 4096 ids instead of one per id. */
const POOL = Buffer.alloc(10 * 4096);
let used = POOL.length;
/** The id is written here as text and read out as one string (no per-digit string pieces). */
const TEXT = Buffer.alloc(36);
/** Where each of the 16 bytes goes in the text, dashes skipped. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
TEXT[8] = TEXT[13] = TEXT[18] = TEXT[23] = 0x2d;

/**
 * A UUID version 7 (RFC 9562): the millisecond time first, then 74 random bits. The data plane
 * passes the time it records as the log record's created_at, so that the log store's get()
 * reads that millisecond from the id and searches only the batches around it.
 */
export function newRequestId(nowMs: number = Date.now()): string {
  if (used === POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const r = used;
  used += 10;
  const high = Math.floor(nowMs / 0x1_0000_0000) & 0xffff;
  const low = nowMs >>> 0;
  put(0, high >>> 8);
  put(1, high & 0xff);
  put(2, low >>> 24);
  put(3, (low >>> 16) & 0xff);
  put(4, (low >>> 8) & 0xff);
  put(5, low & 0xff);
  put(6, 0x70 | (POOL[r]! & 0x0f));
  put(7, POOL[r + 1]!);
  put(8, 0x80 | (POOL[r + 2]! & 0x3f));
  for (let i = 9; i < 16; i++) put(i, POOL[r + i - 6]!);
  return TEXT.toString('latin1', 0, 36);
}

function put(index: number, byte: number): void {
  const at = AT[index]!;
  TEXT[at] = HEX[byte >>> 4]!;
  TEXT[at + 1] = HEX[byte & 0x0f]!;
}
