import type { TokenUsage, UsageStyle } from './token-usage.ts';
import { readSegments } from './read-path.ts';
import { compiledUsageTables, readRawCounters, unifyCounters, type CompiledUsageTable, type RawUsageCounters } from './map-raw-usage.ts';

const TYPE = ['type'];

/**
 * Collects usage from a stream event by event. Only events whose text matches the style's
 * hint are parsed, so a long stream costs one regex test per event, not one JSON.parse.
 */
export class StreamUsageAccumulator {
  readonly #table: CompiledUsageTable;
  #counters: RawUsageCounters | undefined;

  constructor(style: UsageStyle) {
    this.#table = compiledUsageTables[style];
  }

  /**
   * Feeds one event's data text (an SSE `data` payload, or one element of a JSON-array
   * stream). Returns the parsed object when the event was parsed, so callers can inspect it
   * without parsing twice; undefined otherwise.
   */
  push(data: string): unknown {
    if (!this.#table.table.streamHint.test(data)) return undefined;
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
    const type = readSegments(event, TYPE);
    for (const source of this.#table.stream) {
      if (source.eventType !== undefined && source.eventType !== type) continue;
      const usageObject = readSegments(event, source.path);
      if (usageObject === null || typeof usageObject !== 'object') continue;
      const counters = readRawCounters(this.#table, usageObject);
      const kept = this.#counters;
      if (source.merge === 'replace' || kept === undefined) {
        this.#counters = counters;
      } else {
        for (let i = 0; i < counters.length; i++) if (counters[i] !== undefined) kept[i] = counters[i];
      }
    }
  }

  /** Usage seen so far; undefined when no event carried any. */
  result(): TokenUsage | undefined {
    return this.#counters === undefined ? undefined : unifyCounters(this.#table, this.#counters);
  }
}
