/** Letters from most to least frequent in English text, which most of a model's output is. */
const LETTERS_BY_FREQUENCY = 'etaoinshrdlcumwfgypbvkjxqz';

/**
 * Finds a JSON name with its quotes (`"error"`) in bytes. Node's search for a short
 * needle stops at every occurrence of its first byte (memchr) and compares from there, and a
 * quote is the commonest byte of a token stream's JSON framing: searching `"error"` in the
 * bench's 1.2 KB chunk of seven events takes about 0.9 µs, against 0.11 µs for `rror"`. So the
 * search runs from the name's rarest letter (English letter frequencies) and checks the bytes
 * before it. The other way round, a 1.4 KB event of English prose costs 0.75 µs against
 * 0.17 µs, but streams are mostly framing: a delta carries a few words.
 */
export class QuotedNameSearch {
  readonly length: number;
  readonly #head: Buffer;
  readonly #anchor: Buffer;

  constructor(name: string) {
    const quoted = Buffer.from(`"${name}"`);
    const at = rarestLetterAt(quoted);
    this.length = quoted.length;
    this.#head = quoted.subarray(0, at);
    this.#anchor = quoted.subarray(at);
  }

  /** Where in `bytes`, from `from`, the quoted name starts; -1 when it is not there. */
  indexIn(bytes: Buffer, from = 0): number {
    const offset = this.#head.length;
    for (let at = bytes.indexOf(this.#anchor, from + offset); at !== -1; at = bytes.indexOf(this.#anchor, at + 1)) {
      if (startsWithAt(bytes, this.#head, at - offset)) return at - offset;
    }
    return -1;
  }
}

/** The position of the rarest letter inside the quotes (the first of equals); 1 when the name has no letter. */
function rarestLetterAt(quoted: Buffer): number {
  let best = 1;
  let bestRank = -1;
  for (let i = 1; i < quoted.length - 1; i++) {
    const rank = LETTERS_BY_FREQUENCY.indexOf(String.fromCharCode(quoted[i]! | 0x20));
    if (rank > bestRank) {
      best = i;
      bestRank = rank;
    }
  }
  return best;
}

function startsWithAt(bytes: Buffer, head: Buffer, at: number): boolean {
  for (let i = 0; i < head.length; i++) if (bytes[at + i] !== head[i]) return false;
  return true;
}
