import type { LogListItem, LogRecord } from './log-record.ts';
import { encodeBody, type BodyRowValues } from './body-row.ts';

/**
 * The binary form of a batch of log records, as stored in one `log_batches.data` blob.
 *
 *   header   u8 version, u8 header flags, u32 LE record count,
 *            varint n + n strings (the batch's dictionary),
 *            with HEADER_SEQ_OFFSETS: one varint per record, its seq minus the batch's first_seq
 *            (batches rewritten by prune or migrated from request_logs keep their seqs; others
 *            number their records 0, 1, 2, ...)
 *   record   u8 flags, string request_id, f64 created_at, f64 access_key_id,
 *            refs group_id channel credential_id protocol operation route_mode effective
 *            external_model upstream_model, f64 status, ref error_code, f64 attempt_count,
 *            varint n + n × (ref credential_id, ref group_id, f64 status, ref error_code),
 *            f64 started_at ttfb_ms duration_ms input_tokens output_tokens cached_tokens
 *            reasoning_tokens cost
 *
 * A string is a varint byte length and UTF-8. A ref is a varint: 0 for null, i + 1 for the
 * dictionary's string i, so each repeated string (models, ids, protocol, error codes) is stored
 * once per batch. Numbers are float64 with NaN for null (SQLite stored NaN as NULL too), so any
 * number round-trips. Request ids are stored as their bytes, which lets get() search a raw
 * blob with Buffer.indexOf before decoding it.
 */
export const BATCH_VERSION = 1;
export const HEADER_SEQ_OFFSETS = 1;
export const FLAG_CLIENT_ABORTED = 1;
export const FLAG_HAS_BODY = 2;
/** Version, header flags and the u32 count. */
export const FIXED_HEADER_BYTES = 6;

const INITIAL_BYTES = 64 * 1024;
/** A batch that grew its buffer past this (huge strings) gives it back when sealed. */
const KEEP_BYTES = 4 * 1024 * 1024;

export interface EncodedLogBatch {
  /** Its own ArrayBuffer of exactly its size, so that posting it copies only the batch. */
  data: Buffer;
  count: number;
  /** Rows for request_bodies of the records that carry one (rare: only AccessKeys that record bodies). */
  bodies: BodyRowValues[] | undefined;
  /** `data`'s length plus the bodies' text length: what the batch takes in memory. */
  bytes: number;
}

/**
 * Encodes records into one growing buffer, reused from batch to batch. `append` keeps no
 * object of the record: strings and numbers are copied into the buffer (a recorded body is
 * turned into its row's strings), so nothing waits in memory for the garbage collector.
 */
export class LogBatchEncoder {
  #buffer = Buffer.allocUnsafeSlow(INITIAL_BYTES);
  #view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset, this.#buffer.byteLength);
  #at = 0;
  #count = 0;
  readonly #refs = new Map<string, number>();
  #strings: string[] = [];
  #bodies: BodyRowValues[] | undefined;
  /** Length of the bodies' text, counted as each is appended. */
  #bodyBytes = 0;

  /** Records in the open batch. */
  get count(): number {
    return this.#count;
  }

  /** Bytes of the open batch's records and its bodies' text (the dictionary not counted). */
  get bytes(): number {
    return this.#at + this.#bodyBytes;
  }

  append(record: LogRecord): void {
    const body = record.request_body;
    this.#record(record, body !== undefined);
    if (body === undefined) return;
    const row = encodeBody(record.request_id, body);
    (this.#bodies ??= []).push(row);
    this.#bodyBytes += row[3].length;
  }

  /** A record read back from a batch, whose body (if any) is already stored. */
  appendStored(record: Omit<LogListItem, 'has_request_body'>, hasBody: boolean): void {
    this.#record(record, hasBody);
  }

  /**
   * The open batch as one buffer, or undefined when it is empty; the encoder starts a new one.
   * `seqOffsets` (one per record, increasing) keeps the seqs of records encoded again.
   */
  seal(seqOffsets?: ArrayLike<number>): EncodedLogBatch | undefined {
    const count = this.#count;
    if (count === 0) return undefined;
    const strings = this.#strings;
    const lengths = strings.map((s) => Buffer.byteLength(s, 'utf8'));
    let size = FIXED_HEADER_BYTES + varintBytes(strings.length) + this.#at;
    for (const n of lengths) size += varintBytes(n) + n;
    if (seqOffsets !== undefined) for (let i = 0; i < count; i++) size += varintBytes(seqOffsets[i]!);
    const data = Buffer.allocUnsafeSlow(size);
    data[0] = BATCH_VERSION;
    data[1] = seqOffsets === undefined ? 0 : HEADER_SEQ_OFFSETS;
    data.writeUInt32LE(count, 2);
    let at = writeVarint(data, FIXED_HEADER_BYTES, strings.length);
    for (let i = 0; i < strings.length; i++) {
      at = writeVarint(data, at, lengths[i]!);
      at += data.write(strings[i]!, at, 'utf8');
    }
    if (seqOffsets !== undefined) for (let i = 0; i < count; i++) at = writeVarint(data, at, seqOffsets[i]!);
    this.#buffer.copy(data, at, 0, this.#at);
    const batch: EncodedLogBatch = { data, count, bodies: this.#bodies, bytes: size + this.#bodyBytes };
    this.#reset();
    return batch;
  }

  #reset(): void {
    if (this.#buffer.length > KEEP_BYTES) this.#grow(INITIAL_BYTES, 0);
    this.#at = 0;
    this.#count = 0;
    this.#refs.clear();
    this.#strings = [];
    this.#bodies = undefined;
    this.#bodyBytes = 0;
  }

  #record(record: Omit<LogRecord, 'request_body'>, hasBody: boolean): void {
    const start = this.#at;
    try {
      this.#fields(record, hasBody);
    } catch (error) {
      // A record that cannot be encoded (not a LogRecord) must not leave half of itself in the batch.
      this.#at = start;
      throw error;
    }
    this.#count++;
  }

  #fields(record: Omit<LogRecord, 'request_body'>, hasBody: boolean): void {
    const { timings, usage, attempts } = record;
    this.#ensure(1);
    this.#buffer[this.#at++] = (record.client_aborted ? FLAG_CLIENT_ABORTED : 0) | (hasBody ? FLAG_HAS_BODY : 0);
    this.#string(record.request_id);
    // Room for the fields up to the attempts: 4 numbers, 10 refs and the attempts' count.
    this.#ensure(4 * 8 + 10 * 5 + 5);
    this.#number(Math.trunc(record.created_at));
    this.#nullableNumber(record.access_key_id);
    this.#ref(record.group_id);
    this.#ref(record.channel);
    this.#ref(record.credential_id);
    this.#ref(record.protocol);
    this.#ref(record.operation);
    this.#ref(record.route_mode);
    this.#ref(record.effective);
    this.#ref(record.external_model);
    this.#ref(record.upstream_model);
    this.#number(record.status);
    this.#ref(record.error_code);
    this.#number(record.attempt_count);
    this.#varint(attempts.length);
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      this.#ensure(3 * 5 + 8);
      this.#ref(attempt.credential_id);
      this.#ref(attempt.group_id);
      this.#nullableNumber(attempt.status);
      this.#ref(attempt.error_code);
    }
    this.#ensure(8 * 8);
    this.#number(Math.trunc(timings.started_at));
    this.#nullableNumber(timings.ttfb_ms === null ? null : Math.round(timings.ttfb_ms));
    this.#number(Math.round(timings.duration_ms));
    this.#number(usage.input_tokens);
    this.#number(usage.output_tokens);
    this.#number(usage.cached_tokens);
    this.#number(usage.reasoning_tokens);
    this.#number(record.cost);
  }

  #number(value: number): void {
    this.#view.setFloat64(this.#at, value, true);
    this.#at += 8;
  }

  #nullableNumber(value: number | null): void {
    this.#view.setFloat64(this.#at, value === null ? NaN : value, true);
    this.#at += 8;
  }

  #ref(value: string | null): void {
    if (value === null) {
      this.#buffer[this.#at++] = 0;
      return;
    }
    let ref = this.#refs.get(value);
    if (ref === undefined) {
      this.#strings.push(value);
      ref = this.#strings.length;
      this.#refs.set(value, ref);
    }
    if (ref < 0x80) this.#buffer[this.#at++] = ref;
    else this.#at = writeVarint(this.#buffer, this.#at, ref);
  }

  #varint(value: number): void {
    this.#at = writeVarint(this.#buffer, this.#at, value);
  }

  #string(value: string): void {
    const length = value.length;
    this.#ensure(length * 3 + 5);
    const buffer = this.#buffer;
    if (length < 0x80) {
      // Short ASCII (request ids) is copied by hand: cheaper than a call into Buffer.write.
      let at = this.#at + 1;
      for (let i = 0; i < length; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) return this.#utf8(value);
        buffer[at++] = c;
      }
      buffer[this.#at] = length;
      this.#at = at;
      return;
    }
    this.#utf8(value);
  }

  #utf8(value: string): void {
    const length = Buffer.byteLength(value, 'utf8');
    this.#at = writeVarint(this.#buffer, this.#at, length);
    this.#at += this.#buffer.write(value, this.#at, 'utf8');
  }

  #ensure(bytes: number): void {
    if (this.#at + bytes > this.#buffer.length) this.#grow(Math.max(this.#buffer.length * 2, this.#at + bytes), this.#at);
  }

  #grow(size: number, keep: number): void {
    const next = Buffer.allocUnsafeSlow(size);
    this.#buffer.copy(next, 0, 0, keep);
    this.#buffer = next;
    this.#view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }
}

/** Unsigned LEB128; values are below 2^32 (lengths, counts, refs, seq offsets). */
export function writeVarint(buffer: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    buffer[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buffer[at++] = value;
  return at;
}

function varintBytes(value: number): number {
  let n = 1;
  while (value >= 0x80) {
    value >>>= 7;
    n++;
  }
  return n;
}
