import { isUtf8 } from 'node:buffer';

/**
 * Whether a body fed chunk by chunk is UTF-8 (RFC 8259 §8.1 requires it of JSON): each chunk is
 * checked natively, a sequence cut by a chunk's end is carried into the next. Overlong forms,
 * surrogates and stray bytes fail: a lenient decoder upstream could read them as other text.
 */
export class Utf8StreamCheck {
  // The start of a sequence a chunk's end cut, at most 3 bytes.
  #carry: Buffer | undefined;

  /** False once the bytes so far cannot be UTF-8. */
  push(chunk: Buffer): boolean {
    let from = 0;
    if (this.#carry !== undefined) {
      const carry = this.#carry;
      const take = Math.min(sequenceLength(carry[0]!) - carry.length, chunk.length);
      const joined = Buffer.concat([carry, chunk.subarray(0, take)]);
      if (joined.length < sequenceLength(carry[0]!)) {
        this.#carry = joined;
        return true;
      }
      this.#carry = undefined;
      if (!isUtf8(joined)) return false;
      from = take;
    }
    const end = chunk.length - cutSequence(chunk, from);
    if (end < chunk.length) this.#carry = Buffer.from(chunk.subarray(end));
    return isUtf8(chunk.subarray(from, end));
  }

  /** False when the body ended inside a sequence. */
  end(): boolean {
    return this.#carry === undefined;
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
