import { maskSecret } from '../store/mask.ts';
import type { OutgoingHeaders } from '../upstream/index.ts';

/**
 * The forms a secret is echoed in: as it is, percent-encoded (a URL's query) and JSON-escaped
 * with `/` as `\/`, without repeats. They part at the first character the escapes change, so
 * none begins another. The last secret's are kept: answers of one credential come in a row.
 */
function secretForms(secret: string): readonly string[] {
  if (secret !== lastSecret) {
    lastSecret = secret;
    lastForms = secret.length === 0 ? [] : [...new Set([secret, encodeURIComponent(secret), secret.replaceAll('/', '\\/')])];
  }
  return lastForms;
}
let lastSecret = '';
let lastForms: readonly string[] = [];

/**
 * Masks the upstream secret out of an answer's headers, in place. It runs on every answer, so
 * a value is only tested unless it holds the secret: nothing is allocated when none does.
 */
export function maskSecretInHeaders(headers: OutgoingHeaders, secret: string): void {
  const forms = secretForms(secret);
  for (const name in headers) {
    const value = headers[name]!;
    if (typeof value === 'string') {
      if (holdsForm(value, forms)) headers[name] = maskSecretInText(value, secret);
    } else if (value.some((v) => holdsForm(v, forms))) {
      headers[name] = value.map((v) => maskSecretInText(v, secret));
    }
  }
}

function holdsForm(value: string, forms: readonly string[]): boolean {
  for (const form of forms) if (value.includes(form)) return true;
  return false;
}

/** The text with every occurrence of the upstream secret, in any of its forms (secretForms), masked (a header value, a WebSocket close reason). */
export function maskSecretInText(text: string, secret: string): string {
  let masked = text;
  for (const form of secretForms(secret)) if (masked.includes(form)) masked = masked.split(form).join(maskSecret(secret));
  return masked;
}

/**
 * Masks a secret out of a body as it streams (an UpstreamReply body map): every occurrence of
 * one of its forms (secretForms) becomes `maskSecret(secret)`, one split across chunks
 * included. Only the output's longest tail that may still begin a form is held back, until the
 * next chunk or the end, so an event that ends with its blank line goes out whole at once.
 */
export class SecretMaskingStream {
  readonly #forms: readonly Buffer[];
  readonly #masked: Buffer;
  /** A proper prefix of a form that ended the input so far. */
  #held: Buffer | undefined;

  constructor(secret: string) {
    this.#forms = secretForms(secret).map((form) => Buffer.from(form));
    this.#masked = Buffer.from(maskSecret(secret));
  }

  data(chunk: Buffer): Buffer {
    const forms = this.#forms;
    // An empty secret occurs everywhere and masks nothing.
    if (forms.length === 0) return chunk;
    const input = this.#held === undefined ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = undefined;
    const parts: Buffer[] = [];
    let from = 0;
    for (let found = firstForm(input, from, forms); found !== undefined; found = firstForm(input, from, forms)) {
      parts.push(input.subarray(from, found.at), this.#masked);
      from = found.at + found.length;
    }
    let held = 0;
    for (const form of forms) held = Math.max(held, heldTailLength(input, from, form));
    const end = input.length - held;
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

/** The earliest occurrence of any form in `input` from `from` on. */
function firstForm(input: Buffer, from: number, forms: readonly Buffer[]): { at: number; length: number } | undefined {
  let first: { at: number; length: number } | undefined;
  for (const form of forms) {
    const at = input.indexOf(form, from);
    if (at !== -1 && (first === undefined || at < first.at)) first = { at, length: form.length };
  }
  return first;
}

/** The length of the longest tail of `input`, from `from` on, that is a proper prefix of `form`. */
function heldTailLength(input: Buffer, from: number, form: Buffer): number {
  for (let at = Math.max(from, input.length - form.length + 1); at < input.length; at++) {
    if (input[at] === form[0] && input.compare(form, 0, input.length - at, at) === 0) return input.length - at;
  }
  return 0;
}
