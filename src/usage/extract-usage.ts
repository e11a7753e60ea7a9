import type { TokenUsage, UsageStyle } from './token-usage.ts';
import { readSegments } from './read-path.ts';
import { compiledUsageTables, readRawCounters, unifyCounters, type CompiledUsageTable } from './map-raw-usage.ts';
import { parseObjectTail } from './parse-object-tail.ts';
import { scanUsageHead, scanUsageTail } from './scan-usage-bytes.ts';

/** Usage from a parsed non-streaming response body; undefined when the body reports none. */
export function extractUsage(style: UsageStyle, body: unknown): TokenUsage | undefined {
  const table = compiledUsageTables[style];
  return usageOfBody(table, body) ?? alternatesUsage(table, body);
}

/**
 * Same, from the body text; a body that is not JSON reports no usage. Usage being a top-level
 * member, only the body's tail from it is parsed when that is possible.
 */
export function extractUsageFromText(style: UsageStyle, text: string): TokenUsage | undefined {
  return usageOfText(compiledUsageTables[style], text);
}

/**
 * Same, from the body's bytes: the tail from the usage member is scanned without building
 * objects when it can be (scanUsageTail), else the text is read as extractUsageFromText does.
 */
export function extractUsageFromBytes(style: UsageStyle, bytes: Buffer): TokenUsage | undefined {
  const table = compiledUsageTables[style];
  const plan = table.bodyScan;
  const at = plan === undefined ? -1 : bytes.lastIndexOf(plan.member);
  const scanned = plan === undefined || at === -1 ? undefined : scanUsageTail(bytes, at, plan);
  if (scanned?.counters !== undefined) return unifyCounters(table, scanned.counters);
  return usageOfText(table, bytes.toString('utf8'));
}

/**
 * Same, from the last bytes of a body too large to keep whole (it may start mid-string): only
 * the tail scan reads it, as a tail is no JSON document to parse. The member must start a
 * member (after `{` or `,`): a key whose text ends in an escaped quote and `usage` would
 * otherwise match too.
 */
export function extractUsageFromTail(style: UsageStyle, tail: Buffer): TokenUsage | undefined {
  return firstFound(style, (table) => {
    const plan = table.bodyScan;
    if (plan === undefined) return undefined;
    // The last "usage" may be nested in a member after the top-level one (a responses answer's
    // metadata, which the client chose): earlier ones are tried, a bounded number of times.
    let at = tail.length;
    for (let tries = 0; tries < MAX_TAIL_TRIES; tries++) {
      at = at === 0 ? -1 : tail.lastIndexOf(plan.member, at - 1);
      if (at === -1) return undefined;
      const counters = startsMember(tail, at) ? scanUsageTail(tail, at, plan)?.counters : undefined;
      if (counters !== undefined) return unifyCounters(table, counters);
    }
    return undefined;
  });
}

const MAX_TAIL_TRIES = 16;

/**
 * Same, from the first bytes of a body too large to keep whole (it may end mid-string): its
 * top-level usage member when it comes before the rest (embeddings upstreams that put `usage`
 * before `data`), found by scanning the members before it as JSON (scanUsageHead).
 */
export function extractUsageFromHead(style: UsageStyle, head: Buffer): TokenUsage | undefined {
  return firstFound(style, (table) => {
    const plan = table.bodyScan;
    const counters = plan === undefined ? undefined : scanUsageHead(head, plan)?.counters;
    return counters === undefined ? undefined : unifyCounters(table, counters);
  });
}

/** The usage `read` finds with the style's table, else with its body alternates in order (scans of a large body's ends, which parse nothing). */
function firstFound(style: UsageStyle, read: (table: CompiledUsageTable) => TokenUsage | undefined): TokenUsage | undefined {
  const table = compiledUsageTables[style];
  const usage = read(table);
  if (usage !== undefined) return usage;
  for (const alternate of table.alternates) {
    const found = read(alternate);
    if (found !== undefined) return found;
  }
  return undefined;
}

function usageOfBody(table: CompiledUsageTable, body: unknown): TokenUsage | undefined {
  const usageObject = readSegments(body, table.bodyUsagePath);
  if (usageObject === null || typeof usageObject !== 'object') return undefined;
  return unifyCounters(table, readRawCounters(table, usageObject));
}

/** A parsed body's usage as its alternates hold it, when it has no object where the table's usage is (a vendor that puts it elsewhere). */
function alternatesUsage(table: CompiledUsageTable, body: unknown): TokenUsage | undefined {
  if (table.alternates.length === 0) return undefined;
  const usageObject = readSegments(body, table.bodyUsagePath);
  if (usageObject !== null && typeof usageObject === 'object') return undefined;
  for (const alternate of table.alternates) {
    const found = usageOfBody(alternate, body);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The text parsed once at most: only its tail from the usage member when that is possible, else whole (then its alternates read too). */
function usageOfText(table: CompiledUsageTable, text: string): TokenUsage | undefined {
  const member = table.bodyUsageMember;
  const tail = member === undefined ? undefined : parseObjectTail(text, member);
  if (tail !== undefined) return usageOfBody(table, tail);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  return usageOfBody(table, body) ?? alternatesUsage(table, body);
}

/** The byte before `at`, past JSON whitespace, opens an object or separates members. */
function startsMember(bytes: Buffer, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i--;
  return i >= 0 && (bytes[i] === 0x7b || bytes[i] === 0x2c);
}
