import type { TokenUsage, UsageStyle } from './token-usage.ts';
import type { UsageFieldTable } from './usage-field-table.ts';
import { usageFieldTables } from './usage-field-tables.ts';
import { readPath } from './read-path.ts';
import { readRawCounters, unifyCounters, type RawUsageCounters } from './map-raw-usage.ts';

/**
 * Collects usage from a stream event by event. Only events whose text matches the style's
 * hint are parsed, so a long stream costs one regex test per event, not one JSON.parse.
 */
export class StreamUsageAccumulator {
  readonly #table: UsageFieldTable;
  #counters: RawUsageCounters | undefined;

  constructor(style: UsageStyle) {
    this.#table = usageFieldTables[style];
  }

  /**
   * Feeds one event's data text (an SSE `data` payload, or one element of a JSON-array
   * stream). Returns the parsed object when the event was parsed, so callers can inspect it
   * without parsing twice; undefined otherwise.
   */
  push(data: string): unknown {
    if (!this.#table.streamHint.test(data)) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return undefined;
    }
    this.pushParsed(parsed);
    return parsed;
  }

  /** Feeds one already parsed event. */
  pushParsed(event: unknown): void {
    const type = readPath(event, 'type');
    for (const source of this.#table.stream) {
      if (source.eventType !== undefined && source.eventType !== type) continue;
      const usageObject = readPath(event, source.usagePath);
      if (usageObject === null || typeof usageObject !== 'object') continue;
      const counters = readRawCounters(this.#table, usageObject);
      if (source.merge === 'replace' || this.#counters === undefined) {
        this.#counters = counters;
      } else {
        for (const [raw, count] of counters) this.#counters.set(raw, count);
      }
    }
  }

  /** Usage seen so far; undefined when no event carried any. */
  result(): TokenUsage | undefined {
    return this.#counters === undefined ? undefined : unifyCounters(this.#table, this.#counters);
  }
}
