import { endianness } from 'node:os';
import type { DecodedLogBatch } from './decode-log-batch.ts';
import type { LogFilter } from './log-store.ts';

/** Dimensions in COMBOS: access_key_id, group_id, external_model, status, error_code. */
const KEY = 0;
const GROUP = 1;
const MODEL = 2;
const STATUS = 3;
const ERROR_CODE = 4;

/**
 * The combinations of dimensions whose values each record adds to its batch's bloom
 * (log_batch_combos): every pair and the triple of key, Group and model (the console's
 * selectors, drawn independently they match few records together), and each of those with a
 * status or an error code. A filter probes every combination whose dimensions it fixes.
 */
const COMBOS: ReadonlyArray<readonly number[]> = [
  [KEY, GROUP],
  [KEY, MODEL],
  [GROUP, MODEL],
  [KEY, GROUP, MODEL],
  [KEY, STATUS],
  [GROUP, STATUS],
  [MODEL, STATUS],
  [KEY, ERROR_CODE],
  [GROUP, ERROR_CODE],
  [MODEL, ERROR_CODE],
];

/** Each combination's dimensions as bits, and its dimensions flat (COMBO_DIMS[COMBO_START[c]..COMBO_START[c + 1]]), for the writer's loop. */
const COMBO_MASKS = COMBOS.map((dims) => dims.reduce((mask, d) => mask | (1 << d), 0));
const COMBO_DIMS = Int8Array.from(COMBOS.flat());
const COMBO_START = Int32Array.from(COMBOS.map((_, c) => COMBOS.slice(0, c).reduce((n, dims) => n + dims.length, 0)).concat(COMBO_DIMS.length));
const COMBO_SEEDS = Int32Array.from(COMBOS.map((_, c) => mix(c + 1)));

/**
 * Bits of filter per combination of values a batch may hold. Each entry sets 4 bits of one
 * 32-bit word (a blocked Bloom filter: one word touched per entry, which keeps the writer's
 * cost per record small): about 1.6% false positives at 12 bits per entry, less where the
 * sizing overestimates.
 */
const BITS_PER_ENTRY = 12;

function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Equal numbers hash equally (keys and statuses are integers; -0 is 0). */
function numberHash(n: number): number {
  return mix(Math.imul((n >>> 0) ^ 0x27d4eb2f, 0x9e3779b1) ^ (Math.floor(n / 0x100000000) >>> 0));
}

/** FNV-1a over UTF-16 code units: the filter's string and the batch's dictionary entry are the same JS string. */
function stringHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return mix(h);
}

function comboHash(c: number, values: ArrayLike<number>): number {
  let h = COMBO_SEEDS[c]!;
  for (let j = COMBO_START[c]!; j < COMBO_START[c + 1]!; j++) h = Math.imul(((h << 5) | (h >>> 27)) ^ values[COMBO_DIMS[j]!]!, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
  return h ^ (h >>> 13);
}

/** The entry's word (from the hash's high bits) and its 4 bits in it (from a second product). */
function wordOf(h: number, words: number): number {
  return Math.floor((h >>> 0) * (words / 0x100000000));
}

function bitsOf(h: number): number {
  const g = Math.imul(h, 0x2c1b3c6d);
  return (1 << (g >>> 27)) | (1 << ((g >>> 22) & 31)) | (1 << ((g >>> 17) & 31)) | (1 << ((g >>> 12) & 31));
}

/**
 * The batch's bloom over COMBOS. `distinct` is the number of distinct values per dimension
 * (key, Group, model, status, error code): a combination has at most the product of its
 * dimensions' counts, and at most a value per record, which sizes the filter without
 * counting the combinations themselves. Each dictionary string is hashed once; a record
 * missing a dimension (no key, no error code) adds no combination with it, since no filter
 * matches a missing value.
 */
export function comboBloom(batch: DecodedLogBatch, distinct: readonly number[]): Buffer {
  let entries = 0;
  for (const dims of COMBOS) entries += Math.min(batch.count, dims.reduce((n, d) => n * distinct[d]!, 1));
  const count = Math.max(1, Math.ceil((entries * BITS_PER_ENTRY) / 32));
  const words = new Uint32Array(count);
  if (entries > 0) {
    const strings = new Int32Array(batch.strings.length + 1);
    for (let i = 0; i < batch.strings.length; i++) strings[i + 1] = stringHash(batch.strings[i]!);
    const values = new Int32Array(5);
    for (let i = 0; i < batch.count; i++) {
      const key = batch.accessKeyId[i]!;
      const status = batch.status[i]!;
      const present =
        (Number.isNaN(key) ? 0 : 1 << KEY) |
        (batch.groupRef[i] === 0 ? 0 : 1 << GROUP) |
        (batch.modelRef[i] === 0 ? 0 : 1 << MODEL) |
        (Number.isNaN(status) ? 0 : 1 << STATUS) |
        (batch.errorCodeRef[i] === 0 ? 0 : 1 << ERROR_CODE);
      values[KEY] = numberHash(key);
      values[GROUP] = strings[batch.groupRef[i]!]!;
      values[MODEL] = strings[batch.modelRef[i]!]!;
      values[STATUS] = numberHash(status);
      values[ERROR_CODE] = strings[batch.errorCodeRef[i]!]!;
      for (let c = 0; c < COMBO_MASKS.length; c++) {
        if ((present & COMBO_MASKS[c]!) !== COMBO_MASKS[c]!) continue;
        const h = comboHash(c, values);
        words[wordOf(h, count)]! |= bitsOf(h);
      }
    }
  }
  const bloom = Buffer.from(words.buffer);
  // Stored little-endian, whatever the host.
  if (endianness() === 'BE') bloom.swap32();
  return bloom;
}

/** The hashes a batch's bloom must hold for a batch to hold a record of the filter, or undefined when the filter fixes no combination. */
export function filterProbes(filter: LogFilter): number[] | undefined {
  const values = [
    filter.access_key_id === undefined ? undefined : numberHash(filter.access_key_id),
    filter.group_id === undefined ? undefined : stringHash(filter.group_id),
    filter.model === undefined ? undefined : stringHash(filter.model),
    filter.status === undefined ? undefined : numberHash(filter.status),
    filter.error_code === undefined ? undefined : stringHash(filter.error_code),
  ];
  const probes: number[] = [];
  COMBOS.forEach((dims, c) => {
    if (dims.every((d) => values[d] !== undefined)) probes.push(comboHash(c, values as number[]));
  });
  return probes.length === 0 ? undefined : probes;
}

/** False only when the batch holds no record with every probed combination: a bloom only rules batches out. */
export function mayHoldAll(bloom: Buffer, probes: readonly number[]): boolean {
  const count = bloom.length / 4;
  if (count === 0 || !Number.isInteger(count)) return true;
  return probes.every((h) => {
    const bits = bitsOf(h);
    return ((bloom.readUInt32LE(wordOf(h, count) * 4) & bits) >>> 0) === bits >>> 0;
  });
}
