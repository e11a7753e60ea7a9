import type { UnifiedUsageField, UsageStyle } from './token-usage.ts';

/** One raw upstream counter (dotted path inside the usage object) feeding one unified field. */
export interface UsageFieldRow {
  raw: string;
  unified: UnifiedUsageField;
  /** Read instead when `raw` is absent: the first of the two present counts, never both. */
  fallback?: string;
}

/** Where a stream event carries a usage object. */
export interface StreamUsageSource {
  /** Value of the event data's `type` field; absent means any event. */
  eventType?: string;
  /** Dotted path of the usage object inside the event data. */
  usagePath: string;
  /**
   * `replace`: the object holds all counters so far (later objects win whole);
   * `overlay`: cumulative counters; the larger of each present one and the earlier one is kept,
   * absent ones are kept as they were.
   */
  merge: 'replace' | 'overlay';
}

export interface UsageFieldTable {
  style: UsageStyle;
  /** Dotted path of the usage object in a non-streaming JSON body. */
  bodyUsagePath: string;
  /** Rows sharing a unified field are summed. */
  fields: readonly UsageFieldRow[];
  stream: readonly StreamUsageSource[];
  /** Cheap test on an event's raw data text; only matching events are JSON-parsed. */
  streamHint: RegExp;
}
