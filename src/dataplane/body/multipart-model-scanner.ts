import { isUtf8 } from 'node:buffer';
import { BodyRewriteError } from './body-rewrite-error.ts';
import { parseHeaderParams } from './header-params.ts';
import type { BodyScanner, ModelSpan, ScanOutcome } from './model-rewrite.ts';
import { MODEL_FIELD_BYTES } from './model-name-cap.ts';
import { ROUTING_INPUT_MEMBERS, ROUTING_SMALL_MEMBERS } from './routing-members.ts';

const PREAMBLE = 0;
const AFTER_DELIMITER = 1; // "--" (close), or optional padding then CRLF
const HEADERS = 2;
const BODY = 3;
const EPILOGUE = 4;

const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;
const SPACE = 0x20;
const TAB = 0x09;
const HEADER_END = Buffer.from('\r\n\r\n');
const MAX_HEADER_BYTES = 16 * 1024;
/** Text fields up to this size are reported for routing; larger ones (prompts) are not. */
export const SMALL_FIELD_BYTES = 1024;
/**
 * Other small fields are collected only while they stay within these totals, so that a form of
 * many little fields is not held in memory; past them they pass by like a prompt (no error).
 */
export const COLLECTED_FIELDS_BYTES = 64 * 1024;
export const COLLECTED_FIELDS_COUNT = 64;
/**
 * The fields routing reads: collected until the outcome settles whatever came before them, so
 * that padding a form cannot hide them from a rule (after it, the first attempt has begun and
 * none is read). A few values of at most SMALL_FIELD_BYTES each.
 */
const ROUTING_FIELDS: ReadonlySet<string> = new Set([...ROUTING_SMALL_MEMBERS, ...ROUTING_INPUT_MEMBERS]);
/** The transfer encodings that leave a part's bytes as they are (RFC 2045 §6.1), so its model reads as sent. */
const IDENTITY_TRANSFER_ENCODINGS: ReadonlySet<string> = new Set(['7bit', '8bit', 'binary']);
/**
 * A part header line: a token, a colon, no control character but HTAB. Lenient parsers end a
 * header at a bare LF, continue the previous one on a line that starts with whitespace, or trim
 * a name, so any other line could hide or make a `model` part: refused. Python's str.strip()
 * trims \x1c-\x1f and U+0085 too, which the gateway does not take as space.
 */
const HEADER_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\x00-\x08\x0a-\x1f\x7f-\x9f]*$/;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

interface Part {
  readonly name: string;
  kind: 'model' | 'field' | 'skip';
  readonly start: number;
  readonly chunks: Buffer[];
  bytes: number;
}

/**
 * Incremental multipart/form-data scanner (RFC 7578 over RFC 2046 framing) that finds the
 * `model` field and collects small text fields around it. Its outcome settles once the model is
 * known and a file part begins after it, or a text part after it grows past SMALL_FIELD_BYTES
 * (a long prompt, a file sent without a filename: settled at that part's start), or when the
 * form closes: the official SDKs send `stream` and `response_format` after the model, and
 * waiting for them costs only their few bytes. Only part headers and the values it reports are kept; other part bodies pass by. It
 * keeps going after the outcome so that a second `model` field in the streamed tail is an error
 * rather than a silent override. Where lenient upstream parsers (Starlette, Werkzeug) could read
 * a part or a `model` the gateway does not, the form is refused rather than read one way.
 */
export class MultipartModelScanner implements BodyScanner {
  /**
   * Small text fields that ended before the outcome settled, the last duplicate winning: the
   * routing ones, and others within COLLECTED_FIELDS_BYTES and COLLECTED_FIELDS_COUNT.
   */
  readonly fields = new Map<string, string>();
  #collectedBytes = 0;
  // `--boundary`: a delimiter when CRLF comes before it, refused anywhere else.
  readonly #dashBoundary: Buffer;
  #padded = false;
  #state = PREAMBLE;
  // Unconsumed bytes and the absolute offset of the first one. A virtual CRLF starts the body
  // so that a delimiter on the very first line matches like every other one.
  #pending = Buffer.from('\r\n');
  #pendingStart = -2;
  #part: Part | undefined;
  #modelSeen = false;
  // The model field's value, once it has ended; the outcome until the next file or large part, or the close.
  #model: ModelSpan | undefined;
  #outcome: ScanOutcome | undefined;

  constructor(boundary: string) {
    this.#dashBoundary = Buffer.from(`--${boundary}`, 'latin1');
  }

  get outcome(): ScanOutcome | undefined {
    return this.#outcome;
  }

  push(chunk: Buffer): void {
    const data = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const base = this.#pendingStart;
    let pos = 0;
    for (;;) {
      const next = this.#step(data, pos, base);
      if (next === pos) break;
      pos = next;
    }
    // Copied: a few bytes must not pin a whole chunk of the streamed tail.
    this.#pending = Buffer.from(data.subarray(pos));
    this.#pendingStart = base + pos;
    if (this.#state === HEADERS && this.#pending.length > MAX_HEADER_BYTES) this.#fail('part headers too large');
  }

  end(): ScanOutcome {
    if (this.#state !== EPILOGUE || this.#outcome === undefined) this.#fail('the body ends before the closing boundary');
    return this.#outcome;
  }

  // Consumes what it can from data[pos] on and returns the new position; unchanged means it needs more bytes.
  #step(data: Buffer, pos: number, base: number): number {
    switch (this.#state) {
      case PREAMBLE:
      case BODY:
        return this.#body(data, pos, base);
      case AFTER_DELIMITER:
        return this.#afterDelimiter(data, pos, base);
      case HEADERS:
        return this.#headers(data, pos, base);
      default:
        return this.#epilogue(data, pos, base);
    }
  }

  // The boundary anywhere but after CRLF is refused: some parsers (Werkzeug) take a bare LF or
  // CR before it as a line break, and would read parts inside what the gateway sees as a value.
  // A random boundary never occurs in what a client sends.
  #body(data: Buffer, pos: number, base: number): number {
    const found = data.indexOf(this.#dashBoundary, pos);
    if (found === -1) {
      // Hold back only a tail that could still grow into a delimiter, with the CR or CRLF before it.
      let end = data.length - partialMatch(data, pos, this.#dashBoundary);
      if (end > pos && data[end - 1] === CR) end -= 1;
      else if (end - 2 >= pos && data[end - 1] === LF && data[end - 2] === CR) end -= 2;
      this.#partData(data.subarray(pos, end));
      return end;
    }
    // A held-back CRLF is in data; bytes before pos are a header block's end, not this part's.
    if (found - 2 < pos || data[found - 2] !== CR || data[found - 1] !== LF) this.#fail('boundary without CRLF before it', base + found);
    this.#partData(data.subarray(pos, found - 2));
    this.#endPart(base + found - 2);
    this.#state = AFTER_DELIMITER;
    this.#padded = false;
    return found + this.#dashBoundary.length;
  }

  // RFC 2046: the close delimiter's "--" right after the boundary; transport padding (spaces,
  // tabs) only before a CRLF. Parsers that take `--B --` as a close read no further, others go on.
  #afterDelimiter(data: Buffer, pos: number, base: number): number {
    const c = data[pos];
    if (c === undefined) return pos;
    if (c === SPACE || c === TAB) {
      this.#padded = true;
      return pos + 1;
    }
    const d = data[pos + 1];
    if (d === undefined) return pos;
    if (c === DASH && d === DASH && !this.#padded) {
      this.#state = EPILOGUE;
      this.#outcome ??= { model: this.#model, at: base + pos + 2 };
    } else if (c === CR && d === LF) {
      this.#state = HEADERS;
    } else {
      this.#fail('malformed boundary line', base + pos);
    }
    return pos + 2;
  }

  // Clients send nothing or a CRLF after the close delimiter. Anything else is refused: a parser
  // that did not take the close as one would read it as more parts.
  #epilogue(data: Buffer, pos: number, base: number): number {
    for (let i = pos; i < data.length; i++) {
      const c = data[i];
      if (c !== CR && c !== LF && c !== SPACE && c !== TAB) this.#fail('data after the closing boundary', base + i);
    }
    return data.length;
  }

  #headers(data: Buffer, pos: number, base: number): number {
    if (data.length - pos < 2) return pos;
    let end = pos;
    if (data[pos] !== CR || data[pos + 1] !== LF) {
      end = data.indexOf(HEADER_END, pos);
      if (end === -1) return pos;
      if (end - pos > MAX_HEADER_BYTES) this.#fail('part headers too large', base + pos);
    }
    const next = end === pos ? pos + 2 : end + HEADER_END.length;
    this.#startPart(data.subarray(pos, end), base + next);
    this.#state = BODY;
    return next;
  }

  #startPart(headerBlock: Buffer, start: number): void {
    let disposition: string | undefined;
    let dispositionBytes: Buffer = Buffer.alloc(0);
    let otherHeadersUtf8 = true;
    const transferEncodings: string[] = [];
    for (const raw of headerBlock.length === 0 ? [] : splitCrlf(headerBlock)) {
      // Bytes that are not UTF-8 are U+FFFD here and one character each to a Latin-1 reader:
      // the ASCII between them, which gives a header its structure, reads the same to both.
      const line = raw.toString('utf8');
      if (!HEADER_LINE.test(line)) this.#fail('malformed part header', start);
      const colon = line.indexOf(':');
      const header = line.slice(0, colon).toLowerCase();
      if (header === 'content-transfer-encoding') transferEncodings.push(line.slice(colon + 1).trim().toLowerCase());
      if (header !== 'content-disposition') {
        otherHeadersUtf8 &&= isUtf8(raw);
        continue;
      }
      if (disposition !== undefined) this.#fail('repeated Content-Disposition', start);
      disposition = line.slice(colon + 1);
      // The header's name is a token, so its colon is at the same index in bytes.
      dispositionBytes = raw.subarray(colon + 1);
    }
    const parsed = disposition === undefined ? undefined : parseHeaderParams(disposition);
    const params = parsed === undefined ? [] : [...parsed.params.keys()];
    // Latin-1 file names (curl on Windows, legacy-charset pages) pass: what is not UTF-8 may
    // only be inside the quoted value of a parameter other than `name`, where no reader takes it
    // for structure. A name, or a model part's headers, read one way here and another upstream
    // could hide the model.
    if (!isUtf8(headerBlock) && (parsed?.params.get('name') === 'model' || !otherHeadersUtf8 || !utf8OutsideQuotedValues(dispositionBytes))) {
      this.#fail('part headers are not UTF-8 outside a quoted value other than the name', start);
    }
    // RFC 2231 spellings (name*=UTF-8''model, name*0=...): some parsers decode them, some
    // ignore them, so the part's name would depend on who reads it.
    if (params.some((param) => param.startsWith('name*'))) this.#fail('part named by an extended parameter', start);
    const name = parsed?.params.get('name');
    if (parsed?.type !== 'form-data' || name === undefined) this.#fail('part without a form-data name', start);
    const isFile = params.some((param) => param === 'filename' || param.startsWith('filename*'));
    let kind: Part['kind'] = 'skip';
    if (name === 'model') {
      // Every `model` part counts: parsers differ on which filename spellings make a file
      // (Starlette reads filename* as a text field), so one sent as a file is refused.
      if (isFile) this.#fail('model field sent as a file', start);
      if (this.#modelSeen) this.#fail('duplicate model field', start);
      // Routing reads the raw bytes: an upstream that decodes base64 or quoted-printable (RFC 7578
      // §4.7 deprecates them in forms) would run another model than the one routed and mapped.
      if (transferEncodings.some((cte) => !IDENTITY_TRANSFER_ENCODINGS.has(cte))) this.#fail('model field with a Content-Transfer-Encoding other than 7bit, 8bit or binary', start);
      this.#modelSeen = true;
      kind = 'model';
    } else if (!isFile && this.#outcome === undefined && (ROUTING_FIELDS.has(name) || this.#roomFor(name, 0))) {
      kind = 'field';
    }
    // The fields up to here are the ones routing reads: the first attempt may begin. A text part
    // settles it too once it grows past SMALL_FIELD_BYTES (#partData).
    if (isFile && this.#model !== undefined) this.#outcome ??= { model: this.#model, at: start };
    this.#part = { name, kind, start, chunks: [], bytes: 0 };
  }

  #partData(segment: Buffer): void {
    const part = this.#part;
    if (part === undefined || segment.length === 0) return;
    // A skipped part is counted only while its size could still settle the outcome (below).
    if (part.kind === 'skip' && (this.#model === undefined || this.#outcome !== undefined)) return;
    part.bytes += segment.length;
    // Refused as soon as it passes the cap, so that a huge value is neither held nor quoted back.
    if (part.kind === 'model' && part.bytes > MODEL_FIELD_BYTES) this.#fail(`model field longer than ${MODEL_FIELD_BYTES} bytes`, part.start);
    if (part.kind !== 'model' && part.bytes > SMALL_FIELD_BYTES) {
      // After the model, a large text part settles the outcome as a file part does: waiting for
      // the fields after it would hold the first attempt for the whole upload.
      if (this.#model !== undefined) this.#outcome ??= { model: this.#model, at: part.start };
      part.kind = 'skip';
      part.chunks.length = 0;
      return;
    }
    if (part.kind !== 'skip') part.chunks.push(segment);
  }

  #endPart(end: number): void {
    const part = this.#part;
    this.#part = undefined;
    if (part === undefined || part.kind === 'skip') return;
    const value = Buffer.concat(part.chunks);
    if (part.kind === 'field') {
      if (ROUTING_FIELDS.has(part.name)) this.fields.set(part.name, value.toString('utf8'));
      else if (this.#roomFor(part.name, value.length)) {
        this.#collectedBytes += part.name.length + value.length;
        this.fields.set(part.name, value.toString('utf8'));
      }
      return;
    }
    let model: string;
    try {
      model = new TextDecoder('utf-8', { fatal: true }).decode(value);
    } catch {
      this.#fail('model field is not UTF-8', part.start);
    }
    this.#model = { value: model, start: part.start, end };
  }

  // Whether another non-routing field of this size may still be collected.
  #roomFor(name: string, bytes: number): boolean {
    return this.fields.size < COLLECTED_FIELDS_COUNT && this.#collectedBytes + name.length + bytes <= COLLECTED_FIELDS_BYTES;
  }

  #fail(message: string, at = this.#pendingStart): never {
    throw new BodyRewriteError('invalid_multipart', `${message} at byte ${Math.max(at, 0)}`);
  }
}

function splitCrlf(block: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let from = 0;
  for (let at = block.indexOf('\r\n'); at !== -1; at = block.indexOf('\r\n', from)) {
    lines.push(block.subarray(from, at));
    from = at + 2;
  }
  lines.push(block.subarray(from));
  return lines;
}

/**
 * Whether a Content-Disposition value is UTF-8 but for the contents of quoted strings that are
 * not the `name` parameter's value. Quotes and backslashes are ASCII, so the quoted strings are
 * where parseHeaderParams found them; each piece is checked alone, as a quote ends any sequence.
 */
function utf8OutsideQuotedValues(value: Buffer): boolean {
  let from = 0;
  for (let at = value.indexOf(QUOTE); at !== -1; at = value.indexOf(QUOTE, from)) {
    const before = value.subarray(from, at);
    if (!isUtf8(before)) return false;
    let close = at + 1;
    while (close < value.length && value[close] !== QUOTE) close += value[close] === BACKSLASH ? 2 : 1;
    // Read as parseHeaderParams read it: UTF-8, JavaScript's \s.
    const isName = /;\s*name\s*=\s*$/i.test(before.toString('utf8'));
    if (isName && !isUtf8(value.subarray(at + 1, close))) return false;
    from = close + 1;
  }
  return isUtf8(value.subarray(from));
}

/** Length of the longest proper prefix of `needle` that data[from..] ends with. */
function partialMatch(data: Buffer, from: number, needle: Buffer): number {
  for (let k = Math.min(needle.length - 1, data.length - from); k > 0; k--) {
    if (needle.compare(data, data.length - k, data.length, 0, k) === 0) return k;
  }
  return 0;
}
