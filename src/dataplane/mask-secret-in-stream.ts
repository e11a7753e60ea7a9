import { maskSecret } from '../store/mask.ts';

/**
 * Masks a secret out of a body as it streams (an UpstreamReply body map): every occurrence of
 * its bytes becomes `maskSecret(secret)`, one split across chunks included. Only the output's
 * longest tail that may still begin the secret is held back, until the next chunk or the end,
 * so an event that ends with its blank line goes out whole at once.
 */
export class SecretMaskingStream {
  readonly #secret: Buffer;
  readonly #masked: Buffer;
  /** A proper prefix of the secret that ended the input so far. */
  #held: Buffer | undefined;

  constructor(secret: string) {
    this.#secret = Buffer.from(secret);
    this.#masked = Buffer.from(maskSecret(secret));
  }

  data(chunk: Buffer): Buffer {
    const secret = this.#secret;
    // An empty secret occurs everywhere and masks nothing.
    if (secret.length === 0) return chunk;
    const input = this.#held === undefined ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = undefined;
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = input.indexOf(secret); at !== -1; at = input.indexOf(secret, from)) {
      parts.push(input.subarray(from, at), this.#masked);
      from = at + secret.length;
    }
    const end = input.length - heldTailLength(input, from, secret);
    // Copied: the chunk's memory is not ours to keep.
    if (end < input.length) this.#held = Buffer.from(input.subarray(end));
    if (parts.length === 0) return end === input.length ? input : input.subarray(0, end);
    parts.push(input.subarray(from, end));
    return Buffer.concat(parts);
  }

  end(): Buffer | undefined {
    const held = this.#held;
    this.#held = undefined;
    return held;
  }
}

/** The length of the longest tail of `input`, from `from` on, that is a proper prefix of `secret`. */
function heldTailLength(input: Buffer, from: number, secret: Buffer): number {
  for (let at = Math.max(from, input.length - secret.length + 1); at < input.length; at++) {
    if (input[at] === secret[0] && input.compare(secret, 0, input.length - at, at) === 0) return input.length - at;
  }
  return 0;
}
