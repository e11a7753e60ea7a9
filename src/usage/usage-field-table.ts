import type { UnifiedUsageField, UsageStyle } from './token-usage.ts';

/** One raw upstream counter (dotted path inside the usage object) feeding one unified field. */
export interface UsageFieldRow {
  raw: string;
  unified: UnifiedUsageField;
  /** Read instead when `raw` is absent: the first present of `raw` and these counts, never two. */
  fallback?: string | readonly string[];
  /**
   * Counted only when the raw counter `total` is present and equals the sum of the raw
   * counters `parts`, all present: a vendor whose total says the row lies outside the others.
   */
  onlyIf?: { total: string; equalsSumOf: readonly string[] };
  /**
   * Counted as `raw` less the sum of these raw counters, all present, when that is above 0:
   * the part of a vendor's total that its other counters leave out.
   */
  lessSumOf?: readonly string[];
}

/** Where a stream event carries a usage object. */
export interface StreamUsageSource {
  /** Value of the event data's `type` field; absent means any event. */
  eventType?: string;
  /** Dotted path of the usage object inside the event data; a number segment indexes an array. */
  usagePath: string;
  /**
   * `replace`: the object holds all counters so far (later objects win whole);
   * `overlay`: cumulative counters; the larger of each present one and the earlier one is kept,
   * absent ones are kept as they were.
   */
  merge: 'replace' | 'overlay';
  /** Read only when the sources before it found no usage object in the event. */
  fallback?: boolean;
}

/** Another place a non-streaming body may carry its usage, with the counters named there. */
export interface BodyUsageAlternate {
  bodyUsagePath: string;
  fields: readonly UsageFieldRow[];
}

export interface UsageFieldTable {
  style: UsageStyle;
  /** Dotted path of the usage object in a non-streaming JSON body. */
  bodyUsagePath: string;
  /** Rows sharing a unified field are summed. */
  fields: readonly UsageFieldRow[];
  /**
   * Read in order when a body has no object at `bodyUsagePath`: vendors of one protocol that
   * put their usage elsewhere. The first that holds an object is read.
   */
  bodyAlternates?: readonly BodyUsageAlternate[];
  stream: readonly StreamUsageSource[];
  /** Cheap test on an event's raw data text; only matching events are JSON-parsed. */
  streamHint: RegExp;
}
