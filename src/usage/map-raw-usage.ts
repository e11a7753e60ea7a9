import { emptyUsage, type TokenUsage, type UnifiedUsageField, type UsageStyle } from './token-usage.ts';
import type { StreamUsageSource, UsageFieldRow, UsageFieldTable } from './usage-field-table.ts';
import { usageFieldTables } from './usage-field-tables.ts';
import { pathSegments, readCount, type PathSegments } from './read-path.ts';
import { usageScanPlan, type UsageScanPlan } from './scan-usage-bytes.ts';

/** One raw counter read from a usage object, and the unified field it feeds. */
export interface CompiledUsageField {
  /** Undefined for a counter read only for another row's condition (`total_tokens`). */
  readonly unified: UnifiedUsageField | undefined;
  readonly raw: PathSegments;
  /** Counted only while these counters (a fallback's row, and the fallbacks before it) are absent. */
  readonly unless: readonly number[];
  /** Counted only when counter `total` is present and equals the sum of the `parts` counters, all present. */
  readonly onlyIf: { readonly total: number; readonly parts: readonly number[] } | undefined;
  /** Counted less the sum of these counters, all present, and only when above 0. */
  readonly less: readonly number[] | undefined;
}

/** A usage table with its paths split, made once per style. */
export interface CompiledUsageTable {
  readonly table: UsageFieldTable;
  readonly bodyUsagePath: PathSegments;
  /** The body usage path's key with its quotes, when it is a top-level member (a body's tail can then be parsed from it). */
  readonly bodyUsageMember: string | undefined;
  /** The table's rows in order, then one per row's fallback, then the counters only conditions read. */
  readonly fields: readonly CompiledUsageField[];
  readonly stream: ReadonlyArray<StreamUsageSource & { readonly path: PathSegments }>;
  /** For reading a body's usage from its bytes (a top-level usage member only). */
  readonly bodyScan: UsageScanPlan | undefined;
  /** For reading stream events' usage from their bytes: the first source, in any event, top-level. */
  readonly streamScan: UsageScanPlan | undefined;
  /** The table's body alternates, each compiled as a table of its own that streams nothing. */
  readonly alternates: readonly CompiledUsageTable[];
}

/** Raw counters of one usage object, one per compiled field in order; undefined where absent. */
export type RawUsageCounters = Array<number | undefined>;

const NONE: readonly number[] = [];

/** The rows as counters to read: each row, each of its fallbacks, and each counter a condition names that no row reads. */
export function compileFields(rows: readonly UsageFieldRow[]): CompiledUsageField[] {
  const fields: Array<{ unified: UnifiedUsageField | undefined; raw: string; unless: readonly number[]; onlyIf: CompiledUsageField['onlyIf']; less: CompiledUsageField['less'] }> =
    rows.map((row) => ({ unified: row.unified, raw: row.raw, unless: NONE, onlyIf: undefined, less: undefined }));
  rows.forEach((row, i) => {
    const unless = [i];
    for (const fallback of typeof row.fallback === 'string' ? [row.fallback] : (row.fallback ?? [])) {
      unless.push(fields.push({ unified: row.unified, raw: fallback, unless: unless.slice(), onlyIf: undefined, less: undefined }) - 1);
    }
  });
  const counter = (raw: string): number => {
    const at = fields.findIndex((f) => f.raw === raw);
    return at !== -1 ? at : fields.push({ unified: undefined, raw, unless: NONE, onlyIf: undefined, less: undefined }) - 1;
  };
  rows.forEach((row, i) => {
    if (row.onlyIf !== undefined) fields[i]!.onlyIf = { total: counter(row.onlyIf.total), parts: row.onlyIf.equalsSumOf.map(counter) };
    if (row.lessSumOf !== undefined) fields[i]!.less = row.lessSumOf.map(counter);
  });
  return fields.map((f) => ({ ...f, raw: pathSegments(f.raw) }));
}

function compile(table: UsageFieldTable): CompiledUsageTable {
  const fields = compileFields(table.fields);
  const stream = table.stream.map((s) => ({ ...s, path: pathSegments(s.usagePath) }));
  const [source, ...others] = stream;
  // The bytes are read for the first source when it is a top-level member of any event; later
  // sources only as fallbacks ending in one key, which the scan spots nested and then leaves
  // the event to JSON.parse.
  const nestedKeys = [...new Set(others.map((s) => s.path.at(-1)))];
  const scannable = source !== undefined && source.eventType === undefined && source.path.length === 1 &&
    others.every((s) => s.fallback === true && s.eventType === undefined) && nestedKeys.length <= 1 && nestedKeys.every((k) => typeof k === 'string');
  return {
    table,
    bodyUsagePath: pathSegments(table.bodyUsagePath),
    bodyUsageMember: table.bodyUsagePath.includes('.') ? undefined : `"${table.bodyUsagePath}"`,
    fields,
    stream,
    bodyScan: table.bodyUsagePath.includes('.') ? undefined : usageScanPlan(fields, table.bodyUsagePath),
    streamScan: scannable ? usageScanPlan(fields, source.usagePath, nestedKeys[0] as string | undefined) : undefined,
    alternates: (table.bodyAlternates ?? []).map((alternate) => compile({ ...table, ...alternate, bodyAlternates: undefined, stream: [] })),
  };
}

export const compiledUsageTables: Readonly<Record<UsageStyle, CompiledUsageTable>> = {
  completions: compile(usageFieldTables.completions),
  responses: compile(usageFieldTables.responses),
  messages: compile(usageFieldTables.messages),
  generate: compile(usageFieldTables.generate),
  embeddings: compile(usageFieldTables.embeddings),
  rerank: compile(usageFieldTables.rerank),
  suite: compile(usageFieldTables.suite),
};

export function readRawCounters(table: CompiledUsageTable, usageObject: unknown): RawUsageCounters {
  return readFieldCounters(table.fields, usageObject);
}

export function readFieldCounters(fields: readonly CompiledUsageField[], usageObject: unknown): RawUsageCounters {
  const counters: RawUsageCounters = new Array(fields.length);
  for (let i = 0; i < fields.length; i++) counters[i] = readCount(usageObject, fields[i]!.raw);
  return counters;
}

export function unifyCounters(table: CompiledUsageTable, counters: RawUsageCounters): TokenUsage {
  return addCounters(emptyUsage(), table.fields, counters);
}

/** Adds the counters to `usage` as the fields say (fallbacks, conditions); returns it. */
export function addCounters(usage: TokenUsage, fields: readonly CompiledUsageField[], counters: RawUsageCounters): TokenUsage {
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const count = field.less === undefined ? counters[i] : remainder(counters, i, field.less);
    if (count === undefined || field.unified === undefined || anyPresent(counters, field.unless)) continue;
    if (field.onlyIf !== undefined && !totalHolds(counters, field.onlyIf)) continue;
    const sum = usage[field.unified];
    // An optional counter stays absent (0) for a zero count: OpenAI reports audio_tokens: 0 on every answer.
    if (sum === undefined && count === 0) continue;
    usage[field.unified] = (sum ?? 0) + count;
  }
  return usage;
}

function anyPresent(counters: RawUsageCounters, indexes: readonly number[]): boolean {
  for (let i = 0; i < indexes.length; i++) if (counters[indexes[i]!] !== undefined) return true;
  return false;
}

/** Counter `total` less the sum of the `parts`, all present; undefined when any is absent or nothing is left. */
function remainder(counters: RawUsageCounters, total: number, parts: readonly number[]): number | undefined {
  let left = counters[total];
  if (left === undefined) return undefined;
  for (const part of parts) {
    const count = counters[part];
    if (count === undefined) return undefined;
    left -= count;
  }
  return left > 0 ? left : undefined;
}

function totalHolds(counters: RawUsageCounters, condition: NonNullable<CompiledUsageField['onlyIf']>): boolean {
  const total = counters[condition.total];
  if (total === undefined) return false;
  let sum = 0;
  for (const part of condition.parts) {
    const count = counters[part];
    if (count === undefined) return false;
    sum += count;
  }
  return sum === total;
}
