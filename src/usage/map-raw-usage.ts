import { emptyUsage, type TokenUsage, type UnifiedUsageField, type UsageStyle } from './token-usage.ts';
import type { StreamUsageSource, UsageFieldTable } from './usage-field-table.ts';
import { usageFieldTables } from './usage-field-tables.ts';
import { pathSegments, readCount, type PathSegments } from './read-path.ts';
import { usageScanPlan, type UsageScanPlan } from './scan-usage-bytes.ts';

/** A usage table with its paths split, made once per style. */
export interface CompiledUsageTable {
  readonly table: UsageFieldTable;
  readonly bodyUsagePath: PathSegments;
  /** The body usage path's key with its quotes, when it is a top-level member (a body's tail can then be parsed from it). */
  readonly bodyUsageMember: string | undefined;
  /** The table's rows in order, then one per row's fallback, which counts only while the row's own counter (`unless`, else -1) is absent. */
  readonly fields: ReadonlyArray<{ readonly unified: UnifiedUsageField; readonly raw: PathSegments; readonly unless: number }>;
  readonly stream: ReadonlyArray<StreamUsageSource & { readonly path: PathSegments }>;
  /** For reading a body's usage from its bytes (a top-level usage member only). */
  readonly bodyScan: UsageScanPlan | undefined;
  /** For reading stream events' usage from their bytes: one source, in any event, top-level. */
  readonly streamScan: UsageScanPlan | undefined;
}

/** Raw counters of one usage object, one per table field in the table's order; undefined where absent. */
export type RawUsageCounters = Array<number | undefined>;

function compile(table: UsageFieldTable): CompiledUsageTable {
  const fields = table.fields.map((row) => ({ unified: row.unified, raw: pathSegments(row.raw), unless: -1 }));
  table.fields.forEach((row, i) => {
    if (row.fallback !== undefined) fields.push({ unified: row.unified, raw: pathSegments(row.fallback), unless: i });
  });
  const [source, ...others] = table.stream;
  const topLevelSource = source !== undefined && others.length === 0 && source.eventType === undefined && !source.usagePath.includes('.');
  return {
    table,
    bodyUsagePath: pathSegments(table.bodyUsagePath),
    bodyUsageMember: table.bodyUsagePath.includes('.') ? undefined : `"${table.bodyUsagePath}"`,
    fields,
    stream: table.stream.map((s) => ({ ...s, path: pathSegments(s.usagePath) })),
    bodyScan: table.bodyUsagePath.includes('.') ? undefined : usageScanPlan(fields, table.bodyUsagePath),
    streamScan: topLevelSource ? usageScanPlan(fields, source.usagePath) : undefined,
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
  const fields = table.fields;
  const counters: RawUsageCounters = new Array(fields.length);
  for (let i = 0; i < fields.length; i++) counters[i] = readCount(usageObject, fields[i]!.raw);
  return counters;
}

export function unifyCounters(table: CompiledUsageTable, counters: RawUsageCounters): TokenUsage {
  const usage = emptyUsage();
  const fields = table.fields;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field.unless !== -1 && counters[field.unless] !== undefined) continue;
    usage[field.unified] += counters[i] ?? 0;
  }
  return usage;
}
