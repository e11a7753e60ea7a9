import { maskSecret } from '../store/mask.ts';
import type { OutgoingHeaders } from '../upstream/index.ts';
import { isTokenByte, MIN_SUBSTRING_SECRET_LENGTH, wholeTokenPattern } from './short-secret-token.ts';

/**
 * The forms a secret is echoed in (echoedForms), without repeats. One may begin another: `%` is
 * percent-encoded as `%25`. `token` is set for a secret shorter than MIN_SUBSTRING_SECRET_LENGTH,
 * masked only as a whole token (the forms tried in this order at each place, as its alternation
 * does). The last secret's are kept: answers of one credential come in a row.
 */
function secretForms(secret: string): SecretForms {
  if (secret !== lastSecret) {
    lastSecret = secret;
    const forms = secret.length === 0 ? [] : echoedForms(secret);
    lastForms = { forms, token: forms.length > 0 && secret.length < MIN_SUBSTRING_SECRET_LENGTH ? wholeTokenPattern(forms) : undefined };
  }
  return lastForms;
}

/** Characters no URL or JSON encoder changes (RFC 3986's unreserved): a key of only these has one form. */
const UNCHANGED = /^[A-Za-z0-9._~-]*$/;

/**
 * A secret as it is, percent-encoded (`encodeURIComponent`; Python's `quote`, which also
 * encodes `!'()*` and leaves `/`; each in upper- and lower-case hex), JSON-escaped with `/` as
 * `\/`, and JSON-escaped as `\uXXXX` (lower- and upper-case hex) in each ASCII character outside
 * UNCHANGED, or in one such character alone (an encoder escapes its own set: Go's `<>&`, .NET's
 * `+`), in this order, without repeats.
 */
function echoedForms(secret: string): string[] {
  if (UNCHANGED.test(secret)) return [secret];
  const component = encodeURIComponent(secret);
  const quoted = component.replace(/[!'()*]/g, (c) => `%${hex(c).toUpperCase()}`).replaceAll('%2F', '/');
  const escapable = [...new Set(secret)].filter((c) => c < '\x80' && !UNCHANGED.test(c));
  const escapeSets = escapable.length > 1 ? [escapable, ...escapable.map((c) => [c])] : [escapable];
  const escaped = escapeSets.flatMap((set) => [unicodeEscaped(secret, set, false), unicodeEscaped(secret, set, true)]);
  return [...new Set([secret, component, secret.replaceAll('/', '\\/'), quoted, lowerHex(component), lowerHex(quoted), ...escaped])];
}

function hex(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(2, '0');
}

function lowerHex(encoded: string): string {
  return encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
}

function unicodeEscaped(secret: string, chars: readonly string[], upper: boolean): string {
  let out = '';
  for (const c of secret) {
    const code = hex(c).padStart(4, '0');
    out += chars.includes(c) ? `\\u${upper ? code.toUpperCase() : code}` : c;
  }
  return out;
}

interface SecretForms {
  forms: readonly string[];
  /** Global: reset `lastIndex` before `test`. */
  token: RegExp | undefined;
}
let lastSecret = '';
let lastForms: SecretForms = { forms: [], token: undefined };

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

function holdsForm(value: string, { forms, token }: SecretForms): boolean {
  if (token !== undefined) {
    token.lastIndex = 0;
    return token.test(value);
  }
  for (const form of forms) if (value.includes(form)) return true;
  return false;
}

/** The text with every occurrence of the upstream secret, in any of its forms (secretForms), masked (a header value, a WebSocket close reason). */
export function maskSecretInText(text: string, secret: string): string {
  const { forms, token } = secretForms(secret);
  if (token !== undefined) return text.replace(token, () => maskSecret(secret));
  let masked = text;
  for (const form of forms) if (masked.includes(form)) masked = masked.split(form).join(maskSecret(secret));
  return masked;
}

/**
 * Masks a secret out of a body as it streams (an UpstreamReply body map): every occurrence of
 * one of its forms (secretForms) becomes `maskSecret(secret)`, one split across chunks
 * included; a short secret's only as a whole token. Only the output's longest tail that may
 * still begin a form (or, for a short secret, is one whose next byte has not come) is held
 * back, until the next chunk or the end, so an event that ends with its blank line goes out
 * whole at once.
 */
export class SecretMaskingStream {
  readonly #forms: readonly Buffer[];
  readonly #masked: Buffer;
  /** A short secret: masked only as a whole token. */
  readonly #token: boolean;
  /** The input's byte before the held tail (or the next chunk): a short secret's left neighbour. */
  #before: number | undefined;
  /** A tail that may begin a form (a whole form, for a short secret) that ended the input so far. */
  #held: Buffer | undefined;

  constructor(secret: string) {
    const { forms, token } = secretForms(secret);
    this.#forms = forms.map((form) => Buffer.from(form));
    this.#masked = Buffer.from(maskSecret(secret));
    this.#token = token !== undefined;
  }

  data(chunk: Buffer): Buffer {
    // An empty secret occurs everywhere and masks nothing.
    if (this.#forms.length === 0) return chunk;
    const input = this.#held === undefined ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = undefined;
    return this.#mask(input, false);
  }

  end(): Buffer | undefined {
    const held = this.#held;
    this.#held = undefined;
    // The end is a short secret's right boundary: a held whole form is masked now.
    return held === undefined || !this.#token ? held : this.#mask(held, true);
  }

  #mask(input: Buffer, last: boolean): Buffer {
    const forms = this.#forms;
    const parts: Buffer[] = [];
    let from = 0;
    let end: number;
    if (this.#token) {
      end = input.length;
      let search = 0;
      for (;;) {
        const found = firstForm(input, search, forms);
        const at = found?.at ?? input.length;
        // A tail that may still become a form, before any whole one: its outcome is still to come.
        const tail = last ? input.length : earliestTail(input, search, forms);
        if (tail < at) {
          end = tail;
          break;
        }
        if (found === undefined) break;
        const length = this.#wholeTokenAt(input, at, last);
        if (length === undefined) {
          end = at;
          break;
        }
        if (length === 0) {
          search = at + 1;
          continue;
        }
        parts.push(input.subarray(from, at), this.#masked);
        from = search = at + length;
      }
      if (end > 0) this.#before = input[end - 1];
    } else {
      let search = 0;
      for (let found = firstForm(input, search, forms); found !== undefined; found = firstForm(input, search, forms)) {
        parts.push(input.subarray(from, found.at), this.#masked);
        from = search = found.at + found.length;
      }
      let held = 0;
      if (!last) for (const form of forms) held = Math.max(held, heldTailLength(input, search, form));
      end = input.length - held;
    }
    // Copied: the chunk's memory is not ours to keep.
    if (end < input.length) this.#held = Buffer.from(input.subarray(end));
    if (parts.length === 0) return end === input.length ? input : input.subarray(0, end);
    parts.push(input.subarray(from, end));
    return Buffer.concat(parts);
  }

  /**
   * A short secret at `at`, where some form begins: the length of the first form (in order)
   * that stands there as a whole token, 0 when none does, undefined when that waits on bytes
   * still to come (a form that ends the input, or one the input ends inside).
   */
  #wholeTokenAt(input: Buffer, at: number, last: boolean): number | undefined {
    if (isTokenByte(at === 0 ? this.#before : input[at - 1])) return 0;
    const rest = input.length - at;
    for (const form of this.#forms) {
      if (rest < form.length) {
        if (!last && input.compare(form, 0, rest, at) === 0) return undefined;
        continue;
      }
      if (input.compare(form, 0, form.length, at, at + form.length) !== 0) continue;
      if (rest === form.length && !last) return undefined;
      if (!isTokenByte(input[at + form.length])) return form.length;
    }
    return 0;
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

/** Where the longest tail of `input`, from `from` on, that begins a form or is all of one starts; the input's length when none does. */
function earliestTail(input: Buffer, from: number, forms: readonly Buffer[]): number {
  let held = 0;
  for (const form of forms) held = Math.max(held, heldTailLength(input, from, form));
  return input.length - held;
}

/** The length of the longest tail of `input`, from `from` on, that begins `form` or is all of it. */
function heldTailLength(input: Buffer, from: number, form: Buffer): number {
  for (let at = Math.max(from, input.length - form.length); at < input.length; at++) {
    if (input[at] === form[0] && input.compare(form, 0, input.length - at, at) === 0) return input.length - at;
  }
  return 0;
}
