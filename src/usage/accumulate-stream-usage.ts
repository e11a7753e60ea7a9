import type { TokenUsage, UsageStyle } from './token-usage.ts';
import { readSegments } from './read-path.ts';
import { compiledUsageTables, readRawCounters, unifyCounters, type CompiledUsageTable, type RawUsageCounters } from './map-raw-usage.ts';
import { scanUsageEvent, type ScannedUsage } from './scan-usage-bytes.ts';

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

  /**
   * Feeds one event's data from its bytes (`bytes[from, to)`) without parsing it, for styles
   * whose usage is a top-level member of any event. Undefined when it cannot be read so (the
   * style, or data scanUsageEvent leaves to JSON.parse): nothing was fed, push the text then.
   */
  pushBytes(bytes: Uint8Array, from: number, to: number): ScannedUsage | undefined {
    const plan = this.#table.streamScan;
    const scanned = plan === undefined ? undefined : scanUsageEvent(bytes, from, to, plan);
    if (scanned?.counters !== undefined) this.#merge(this.#table.stream[0]!, scanned.counters);
    return scanned;
  }

  /** Feeds one already parsed event. */
  pushParsed(event: unknown): void {
    const type = readSegments(event, TYPE);
    let found = false;
    for (const source of this.#table.stream) {
      if ((source.fallback === true && found) || (source.eventType !== undefined && source.eventType !== type)) continue;
      const usageObject = readSegments(event, source.path);
      if (usageObject === null || typeof usageObject !== 'object') continue;
      found = true;
      this.#merge(source, readRawCounters(this.#table, usageObject));
    }
  }

  #merge(source: CompiledUsageTable['stream'][number], counters: RawUsageCounters): void {
    const kept = this.#counters;
    // An empty usage object after a real one (`"usage":{}` on a later chunk) says nothing: it must not reset it.
    if (kept !== undefined && counters.every((c) => c === undefined)) return;
    if (source.merge === 'replace' || kept === undefined) {
      this.#counters = counters;
    } else {
      // Counters only grow within one stream: a later 0 (some compatible upstreams send
      // `input_tokens: 0` in message_delta) must not wipe what message_start reported.
      for (let i = 0; i < counters.length; i++) if (counters[i] !== undefined) kept[i] = Math.max(kept[i] ?? 0, counters[i]!);
    }
  }

  /** Usage seen so far; undefined when no event carried any. */
  result(): TokenUsage | undefined {
    return this.#counters === undefined ? undefined : unifyCounters(this.#table, this.#counters);
  }
}
