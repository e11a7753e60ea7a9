import { isUtf8 } from 'node:buffer';

/**
 * Whether a body fed chunk by chunk is UTF-8 (RFC 8259 §8.1 requires it of JSON): each chunk is
 * checked natively, a sequence cut by a chunk's end is carried into the next. Overlong forms,
 * surrogates and stray bytes fail: a lenient decoder upstream could read them as other text.
 * A sequence cut by the body's end is not reported: for JSON it is inside a string the lexer
 * finds unclosed, or after the value, where the lexer refuses any byte but whitespace.
 */
export class Utf8StreamCheck {
  // The start of a sequence a chunk's end cut, at most 3 bytes.
  #carry: Buffer | undefined;
  // Absolute offset of the chunk being checked.
  #base = 0;

  /** The absolute offset of the first byte that cannot be UTF-8, or -1 while the bytes so far can be. */
  push(chunk: Buffer): number {
    const base = this.#base;
    this.#base += chunk.length;
    let from = 0;
    if (this.#carry !== undefined) {
      const carry = this.#carry;
      const take = Math.min(sequenceLength(carry[0]!) - carry.length, chunk.length);
      const joined = Buffer.concat([carry, chunk.subarray(0, take)]);
      if (joined.length < sequenceLength(carry[0]!)) {
        this.#carry = joined;
        return -1;
      }
      this.#carry = undefined;
      if (!isUtf8(joined)) return base - carry.length + firstInvalid(joined);
      from = take;
    }
    const end = chunk.length - cutSequence(chunk, from);
    if (end < chunk.length) this.#carry = Buffer.from(chunk.subarray(end));
    const body = chunk.subarray(from, end);
    return isUtf8(body) ? -1 : base + from + firstInvalid(body);
  }
}

// Bytes a sequence starting with `lead` takes; 1 for anything that cannot start a longer one.
function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 1;
}

// How many bytes at the chunk's end start a sequence that needs more than the chunk has.
function cutSequence(chunk: Buffer, from: number): number {
  for (let k = 1; k <= 3 && chunk.length - k >= from; k++) {
    const c = chunk[chunk.length - k]!;
    if ((c & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    return sequenceLength(c) > k ? k : 0;
  }
  return 0;
}

/**
 * Index of the first sequence that is not UTF-8 (Unicode Table 3-7) in bytes that failed the
 * native check.
 */
function firstInvalid(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    const length = lead < 0x80 ? 1 : sequenceLength(lead);
    if (length === 1 && lead >= 0x80) return i;
    // The second byte's range depends on the lead: no overlong forms, surrogates or past U+10FFFF.
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i;
    }
    i += length;
  }
  return bytes.length;
}
