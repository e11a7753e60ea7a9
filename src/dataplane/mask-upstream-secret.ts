import type { OutgoingHeaders } from '../upstream/index.ts';
import { echoedForms } from './secret-echo-forms.ts';
import { isTokenByte, MIN_SUBSTRING_SECRET_LENGTH, wholeTokenPattern } from './short-secret-token.ts';

/** A secret shorter than this is shown to data-plane clients as MASK alone. */
const MIN_HINTED_SECRET_LENGTH = 24;
const MASK = '***';

/**
 * What a data-plane client sees in place of the upstream secret: MASK, then its last four
 * characters for a secret of MIN_HINTED_SECRET_LENGTH or more, to tell credentials apart. Not
 * maskSecret's first-and-last four of the management listings: the client is not the operator,
 * and eight characters are most of a short self-hosted key.
 */
export function maskedForClients(secret: string): string {
  return secret.length >= MIN_HINTED_SECRET_LENGTH ? `${MASK}${secret.slice(-4)}` : MASK;
}

/**
 * The forms a secret is echoed in (echoedForms), and what each is masked to. `token` is set
 * for a secret shorter than MIN_SUBSTRING_SECRET_LENGTH, masked only as a whole token; `any`
 * for a longer one, masked wherever a form occurs; either tries the forms in this order at
 * each place, as the streaming maskers do.
 */
interface SecretForms {
  forms: readonly string[];
  /** The shortest form's length: a shorter header value cannot hold one. */
  shortest: number;
  masked: string;
  /** Global: reset `lastIndex` before `test`. */
  token: RegExp | undefined;
  any: RegExp | undefined;
}

/**
 * Each secret's forms, built once: a Group's credentials take turns (smooth weighted
 * round-robin), so consecutive answers often carry different secrets, up to a Group's every
 * credential. Past FORMS_KEPT secrets (1 to 2.5 KB each) the oldest entry goes, so an entry no
 * pool forgets ages out; past it a secret's forms are remade per answer (about 8 us for a usual key).
 */
const formsBySecret = new Map<string, SecretForms>();
const FORMS_KEPT = 16_384;

/** Drops a secret's forms: CredentialPool forgets a deleted or rotated secret, and so does this cache. */
export function forgetSecretForms(secret: string): void {
  formsBySecret.delete(secret);
}

/** For diagnostics (tests of churn): whether a secret's forms are kept. */
export function secretFormsKept(secret: string): boolean {
  return formsBySecret.has(secret);
}

function secretForms(secret: string): SecretForms {
  let cached = formsBySecret.get(secret);
  if (cached === undefined) {
    if (formsBySecret.size >= FORMS_KEPT) formsBySecret.delete(formsBySecret.keys().next().value!);
    const forms = secret.length === 0 ? [] : echoedForms(secret);
    const short = secret.length < MIN_SUBSTRING_SECRET_LENGTH;
    cached = {
      forms,
      shortest: forms[0]?.length ?? 0,
      masked: maskedForClients(secret),
      token: forms.length > 0 && short ? wholeTokenPattern(forms) : undefined,
      any: forms.length > 0 && !short ? anyFormPattern(forms) : undefined,
    };
    formsBySecret.set(secret, cached);
  }
  return cached;
}

/**
 * Masks the upstream secret out of an answer's headers, in place. It runs on every answer, so
 * a value is only tested unless it holds the secret: once the secret's forms are kept
 * (secretForms), nothing is allocated when no value holds one.
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

function holdsForm(value: string, { forms, shortest, token }: SecretForms): boolean {
  if (value.length < shortest) return false;
  if (token !== undefined) {
    token.lastIndex = 0;
    return token.test(value);
  }
  for (const form of forms) if (value.includes(form)) return true;
  return false;
}

/** The text with every occurrence of the upstream secret, in any of its forms (secretForms), masked (a header value, a WebSocket close reason). */
export function maskSecretInText(text: string, secret: string): string {
  const { masked, token, any } = secretForms(secret);
  const pattern = token ?? any;
  return pattern === undefined ? text : text.replace(pattern, () => masked);
}

/** The bytes with every occurrence of the upstream secret masked, as SecretMaskingStream masks them, over one chunk (a body read whole, an event). */
export function maskSecretInBytes(bytes: Buffer, secret: string): Buffer {
  const masking = new SecretMaskingStream(secret);
  const head = masking.data(bytes);
  const held = masking.end();
  return held === undefined ? head : Buffer.concat([head, held]);
}

/**
 * Masks a secret out of a body as it streams (an UpstreamReply body map): every occurrence of
 * one of its forms (secretForms) becomes `maskedForClients(secret)`, one split across chunks
 * included; a short secret's only as a whole token. Only the output's longest tail that may
 * still begin a form (or, for a short secret, is one whose next byte has not come) is held
 * back, until the next chunk or the end, so an event that ends with its blank line goes out
 * whole at once.
 */
export class SecretMaskingStream {
  /** Undefined for an empty secret: it occurs everywhere and masks nothing. */
  readonly #masker: SubstringMasker | WholeTokenMasker | undefined;

  constructor(secret: string) {
    const { forms, token, masked: mask } = secretForms(secret);
    const bytes = forms.map((form) => Buffer.from(form));
    const masked = Buffer.from(mask);
    if (forms.length === 0) this.#masker = undefined;
    else this.#masker = token === undefined ? new SubstringMasker(bytes, masked) : new WholeTokenMasker(bytes, masked);
  }

  data(chunk: Buffer): Buffer {
    return this.#masker === undefined ? chunk : this.#masker.data(chunk);
  }

  end(): Buffer | undefined {
    return this.#masker?.end();
  }
}

/** What both maskers share: the secret's forms, the mask, and the tail held back for the next chunk. */
abstract class HeldTailMasker {
  protected readonly forms: readonly Buffer[];
  protected readonly masked: Buffer;
  /** A tail that may begin a form (or, for whole tokens, is a whole form whose next byte has not come), that ended the input so far. */
  protected held: Buffer | undefined;

  constructor(forms: readonly Buffer[], masked: Buffer) {
    this.forms = forms;
    this.masked = masked;
  }

  /** The held tail, then `chunk`. */
  protected withHeld(chunk: Buffer): Buffer {
    return this.held === undefined ? chunk : Buffer.concat([this.held, chunk]);
  }

  /** The held tail, no longer held. */
  protected takeHeld(): Buffer | undefined {
    const held = this.held;
    this.held = undefined;
    return held;
  }
}

/** A secret of MIN_SUBSTRING_SECRET_LENGTH or more: each of its forms is masked wherever it occurs. */
class SubstringMasker extends HeldTailMasker {
  data(chunk: Buffer): Buffer {
    return this.#mask(this.withHeld(chunk), false);
  }

  end(): Buffer | undefined {
    const held = this.takeHeld();
    // No form can grow any more: one the held tail holds is masked now.
    return held === undefined ? undefined : this.#mask(held, true);
  }

  #mask(input: Buffer, last: boolean): Buffer {
    const parts: Buffer[] = [];
    let from = 0;
    let end = input.length;
    for (let found = firstForm(input, from, this.forms); found !== undefined; found = firstForm(input, from, this.forms)) {
      // A form the input ends inside, begun before this one, would be the one masked in the whole text.
      const tail = last ? input.length : earliestTail(input, from, this.forms);
      if (tail < found.at) {
        end = tail;
        break;
      }
      parts.push(input.subarray(from, found.at), this.masked);
      from = found.at + found.length;
    }
    if (end === input.length && !last) end = earliestTail(input, from, this.forms);
    this.held = tailFrom(input, end);
    return joined(input, parts, from, end);
  }
}

/** A short secret: its forms are masked only as whole tokens. */
class WholeTokenMasker extends HeldTailMasker {
  /** The input's byte before the held tail (or the next chunk): a form's left neighbour. */
  #before: number | undefined;

  data(chunk: Buffer): Buffer {
    return this.#mask(this.withHeld(chunk), false);
  }

  end(): Buffer | undefined {
    const held = this.takeHeld();
    // The end is a token's right boundary: a held whole form is masked now.
    return held === undefined ? undefined : this.#mask(held, true);
  }

  #mask(input: Buffer, last: boolean): Buffer {
    const forms = this.forms;
    const parts: Buffer[] = [];
    let from = 0;
    let search = 0;
    let end = input.length;
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
      parts.push(input.subarray(from, at), this.masked);
      from = search = at + length;
    }
    if (end > 0) this.#before = input[end - 1];
    this.held = tailFrom(input, end);
    return joined(input, parts, from, end);
  }

  /**
   * At `at`, where some form begins: the length of the first form (in order) that stands there
   * as a whole token, 0 when none does, undefined when that waits on bytes still to come (a
   * form that ends the input, or one the input ends inside).
   */
  #wholeTokenAt(input: Buffer, at: number, last: boolean): number | undefined {
    if (isTokenByte(at === 0 ? this.#before : input[at - 1])) return 0;
    const rest = input.length - at;
    for (const form of this.forms) {
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

/** Every form, tried in order at each place. */
function anyFormPattern(forms: readonly string[]): RegExp {
  return new RegExp(forms.map((form) => form.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'g');
}

/** The input from `end` on, to hold until the next chunk; copied: the chunk's memory is not ours to keep. */
function tailFrom(input: Buffer, end: number): Buffer | undefined {
  return end < input.length ? Buffer.from(input.subarray(end)) : undefined;
}

/** The output: `parts` (the input before `from`, masked), then the input from `from` to `end`. */
function joined(input: Buffer, parts: Buffer[], from: number, end: number): Buffer {
  if (parts.length === 0) return end === input.length ? input : input.subarray(0, end);
  parts.push(input.subarray(from, end));
  return Buffer.concat(parts);
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
