import type { AttemptRecord, EffectiveMode, LogListItem, RouteMode } from './log-record.ts';
import { BATCH_VERSION, FIXED_HEADER_BYTES, FLAG_CLIENT_ABORTED, FLAG_HAS_BODY, HEADER_SEQ_OFFSETS } from './encode-log-batch.ts';

/**
 * A batch decoded into columns: what filters and aggregates read, without an object per
 * record. `record(batch, i)` builds the full record for the few that a page returns.
 * Refs are 0 for null, i + 1 for `strings[i]`; numbers are NaN for null.
 */
export interface DecodedLogBatch {
  readonly data: Buffer;
  readonly count: number;
  readonly strings: readonly string[];
  /** Seq minus the batch's first_seq, per record. */
  readonly seqOffset: Uint32Array;
  /** Where each record starts in `data`. */
  readonly offset: Uint32Array;
  readonly flags: Uint8Array;
  readonly createdAt: Float64Array;
  readonly accessKeyId: Float64Array;
  readonly groupRef: Uint32Array;
  readonly modelRef: Uint32Array;
  readonly status: Float64Array;
  readonly errorCodeRef: Uint32Array;
  readonly attemptCount: Float64Array;
  readonly ttfbMs: Float64Array;
  readonly durationMs: Float64Array;
  readonly inputTokens: Float64Array;
  readonly outputTokens: Float64Array;
  readonly cachedTokens: Float64Array;
  readonly reasoningTokens: Float64Array;
  readonly cost: Float64Array;
}

/** Reads a batch sequentially; every field is read or skipped in the order it was written. */
class Reader {
  at: number;
  readonly view: DataView;
  constructor(
    readonly data: Buffer,
    at: number,
  ) {
    this.at = at;
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  varint(): number {
    const data = this.data;
    let byte = data[this.at++]!;
    if (byte < 0x80) return byte;
    let value = byte & 0x7f;
    let shift = 7;
    do {
      byte = data[this.at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte >= 0x80);
    return value;
  }

  number(): number {
    const value = this.view.getFloat64(this.at, true);
    this.at += 8;
    return value;
  }

  skipNumbers(n: number): void {
    this.at += 8 * n;
  }

  string(): string {
    const length = this.varint();
    const start = this.at;
    this.at += length;
    return this.data.toString('utf8', start, this.at);
  }

  skipString(): void {
    const length = this.varint();
    this.at += length;
  }
}

export function decodeLogBatch(data: Buffer): DecodedLogBatch {
  if (data[0] !== BATCH_VERSION) throw new Error(`log batch of unknown version ${data[0]}`);
  const count = data.readUInt32LE(2);
  const r = new Reader(data, FIXED_HEADER_BYTES);
  const strings: string[] = new Array(r.varint());
  for (let i = 0; i < strings.length; i++) strings[i] = r.string();
  const seqOffset = new Uint32Array(count);
  if ((data[1]! & HEADER_SEQ_OFFSETS) !== 0) for (let i = 0; i < count; i++) seqOffset[i] = r.varint();
  else for (let i = 0; i < count; i++) seqOffset[i] = i;
  const batch = {
    data,
    count,
    strings,
    seqOffset,
    offset: new Uint32Array(count),
    flags: new Uint8Array(count),
    createdAt: new Float64Array(count),
    accessKeyId: new Float64Array(count),
    groupRef: new Uint32Array(count),
    modelRef: new Uint32Array(count),
    status: new Float64Array(count),
    errorCodeRef: new Uint32Array(count),
    attemptCount: new Float64Array(count),
    ttfbMs: new Float64Array(count),
    durationMs: new Float64Array(count),
    inputTokens: new Float64Array(count),
    outputTokens: new Float64Array(count),
    cachedTokens: new Float64Array(count),
    reasoningTokens: new Float64Array(count),
    cost: new Float64Array(count),
  } satisfies DecodedLogBatch;
  for (let i = 0; i < count; i++) {
    batch.offset[i] = r.at;
    batch.flags[i] = data[r.at++]!;
    r.skipString();
    batch.createdAt[i] = r.number();
    batch.accessKeyId[i] = r.number();
    batch.groupRef[i] = r.varint();
    // channel, credential_id, protocol, operation, route_mode, effective
    for (let k = 0; k < 6; k++) r.varint();
    batch.modelRef[i] = r.varint();
    r.varint();
    batch.status[i] = r.number();
    batch.errorCodeRef[i] = r.varint();
    batch.attemptCount[i] = r.number();
    const attempts = r.varint();
    for (let k = 0; k < attempts; k++) {
      r.varint();
      r.varint();
      r.skipNumbers(1);
      r.varint();
    }
    r.skipNumbers(1);
    batch.ttfbMs[i] = r.number();
    batch.durationMs[i] = r.number();
    batch.inputTokens[i] = r.number();
    batch.outputTokens[i] = r.number();
    batch.cachedTokens[i] = r.number();
    batch.reasoningTokens[i] = r.number();
    batch.cost[i] = r.number();
  }
  return batch;
}

/** The string a ref names (null for 0). */
export function refString(batch: DecodedLogBatch, ref: number): string | null {
  return ref === 0 ? null : batch.strings[ref - 1]!;
}

/** Record `i` of a decoded batch, as list items are returned. */
export function decodedRecord(batch: DecodedLogBatch, i: number): LogListItem {
  const r = new Reader(batch.data, batch.offset[i]!);
  const strings = batch.strings;
  const ref = (): string | null => {
    const n = r.varint();
    return n === 0 ? null : strings[n - 1]!;
  };
  const nullable = (): number | null => {
    const n = r.number();
    return Number.isNaN(n) ? null : n;
  };
  const flags = batch.data[r.at++]!;
  const request_id = r.string();
  const created_at = r.number();
  const access_key_id = nullable();
  const group_id = ref();
  const channel = ref();
  const credential_id = ref();
  const protocol = ref()!;
  const operation = ref()!;
  const route_mode = ref() as RouteMode | null;
  const effective = ref() as EffectiveMode | null;
  const external_model = ref();
  const upstream_model = ref();
  const status = r.number();
  const error_code = ref();
  const attempt_count = r.number();
  const attempts: AttemptRecord[] = new Array(r.varint());
  for (let k = 0; k < attempts.length; k++) {
    attempts[k] = { credential_id: ref(), group_id: ref(), status: nullable(), error_code: ref() };
  }
  const started_at = r.number();
  const ttfb_ms = nullable();
  const duration_ms = r.number();
  const input_tokens = r.number();
  const output_tokens = r.number();
  const cached_tokens = r.number();
  const reasoning_tokens = r.number();
  const cost = r.number();
  return {
    request_id,
    created_at,
    access_key_id,
    group_id,
    channel,
    credential_id,
    protocol,
    operation,
    route_mode,
    effective,
    external_model,
    upstream_model,
    status,
    error_code,
    attempt_count,
    attempts,
    client_aborted: (flags & FLAG_CLIENT_ABORTED) !== 0,
    timings: { started_at, ttfb_ms, duration_ms },
    usage: { input_tokens, output_tokens, cached_tokens, reasoning_tokens },
    cost,
    currency: 'USD',
    has_request_body: (flags & FLAG_HAS_BODY) !== 0,
  };
}
