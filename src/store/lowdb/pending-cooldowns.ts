import { AsyncResource } from 'node:async_hooks';
import type { Clock } from '../clock.ts';
import type { ConfigData, StoredCredential } from './config-document.ts';
import { revisionOf } from './credential-revision.ts';
import type { JsonDocument } from './json-document.ts';

/** A cooldown verdict held in memory until the next flush takes it to config.json. */
export interface PendingCooldown {
  readonly groupId: number;
  readonly until: string;
  /** The credential's revision the verdict was for: any change of the credential since outdates it. */
  readonly revision: number;
  /** When it was noted: the credential's updated_at once written. */
  readonly at: string;
  /** The ledger's version that noted it. */
  readonly version: number;
}

/**
 * How long a cooldown verdict waits in memory before one write takes every pending one to
 * config.json: at most one such write per window, whatever the rate of 429s (each write copies,
 * serializes and renames the whole file, and makes the data plane rebuild its snapshot).
 */
export const COOLDOWN_FLUSH_MS = 2000;

/**
 * Whether `p` still holds for `c` as stored: noted for its current revision, and ending later
 * than the cooldown stored (of two ends the later stands, as between verdicts).
 */
function pendingStands(c: StoredCredential, p: PendingCooldown | undefined): p is PendingCooldown {
  return p !== undefined && p.revision === revisionOf(c) && (c.cooldown_until === null || Date.parse(p.until) > Date.parse(c.cooldown_until));
}

/** Thrown in the flush's write to leave the file alone when no pending cooldown would change it. */
const NOTHING_TO_WRITE = Symbol('no pending cooldown to write');

/**
 * The cooldown verdicts noted since the last flush, by credential id. Reads of the credentials
 * overlay them (`of`); a crash loses at most one window of them (the next failing answer sets
 * the cooldown again); `close` writes them.
 */
export class PendingCooldowns {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #clock: Clock;
  readonly #flushAfterMs: number;
  /** Enable verdicts being written, by credential id: the last version each ends. */
  readonly #ending = new Map<number, number>();
  #entries = new Map<number, PendingCooldown>();
  #version = 0;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #open: boolean;
  /** The store's opening context: a flush is no write of the request whose verdict started its window (an Idempotency-Key's). */
  readonly #context = new AsyncResource('PendingCooldownsFlush');

  /** `open` false (a read-only store): nothing is noted, verdicts take the document's own (failing) write. */
  constructor(doc: JsonDocument<ConfigData>, clock: Clock, flushAfterMs: number, open: boolean) {
    this.#doc = doc;
    this.#clock = clock;
    this.#flushAfterMs = flushAfterMs;
    this.#open = open;
  }

  /** Whether verdicts are noted here: not once the store closes, nor in a read-only one. */
  get open(): boolean {
    return this.#open;
  }

  /** Moves with every cooldown noted; a reader that saw one version asks `notedSince` it what moved. */
  get version(): number {
    return this.#version;
  }

  /** The pending cooldown of `c` while it stands (pendingStands). */
  of(c: StoredCredential): PendingCooldown | undefined {
    if (this.#entries.size === 0) return undefined;
    const p = this.#entries.get(c.id);
    return pendingStands(c, p) ? p : undefined;
  }

  note(c: StoredCredential, until: string, at: string): void {
    this.#entries.set(c.id, { groupId: c.group_id, until, revision: revisionOf(c), at, version: ++this.#version });
    if (this.#timer === undefined && this.#flushing === undefined) this.#schedule();
  }

  /**
   * An enable verdict ending the pending cooldown of `id` noted at or before `upTo` is being
   * written: a flush in the same write must not put it back. `ended` when that write is over.
   */
  ending(id: number, upTo: number): void {
    this.#ending.set(id, upTo);
  }

  ended(id: number): void {
    this.#ending.delete(id);
  }

  /** Ends the pending cooldown of `id` noted at or before `upTo` (a version); a later one stands. */
  drop(id: number, upTo: number): void {
    const p = this.#entries.get(id);
    if (p !== undefined && p.version <= upTo) this.#entries.delete(id);
  }

  /** The cooldowns noted after `version`, by credential id. */
  notedSince(version: number): Map<number, PendingCooldown> {
    const noted = new Map<number, PendingCooldown>();
    for (const [id, p] of this.#entries) if (p.version > version) noted.set(id, p);
    return noted;
  }

  /**
   * Writes the pending cooldowns in one write; never rejects. Those of credentials deleted or
   * changed since, or whose end has passed or is no later than the file's, are dropped unwritten.
   * A write the disk refuses keeps them for the next window (the store's writesFailing says so).
   */
  #flush(): Promise<void> {
    this.#flushing ??= this.#write().finally(() => {
      this.#flushing = undefined;
      if (this.#entries.size > 0 && this.#open) this.#schedule();
    });
    return this.#flushing;
  }

  /** Stops noting and writes what is pending (a graceful shutdown keeps every cooldown). */
  async close(): Promise<void> {
    this.#open = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
    await this.#flush();
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#context.runInAsyncScope(() => this.#flush());
    }, this.#flushAfterMs);
    // A pending flush does not keep the process up: close() writes, a crash loses one window.
    this.#timer.unref();
  }

  async #write(): Promise<void> {
    if (this.#entries.size === 0) return;
    const taken = new Map(this.#entries);
    // Still pending too (an enable verdict written while this write waited its turn dropped its
    // entry), and not being ended by an enable verdict in this same write.
    const writable = (d: Readonly<ConfigData>, now: number) => d.credentials.filter((c) => {
      const p = taken.get(c.id);
      return pendingStands(c, p) && this.#entries.get(c.id) === p && (this.#ending.get(c.id) ?? -1) < p.version && Date.parse(p.until) > now;
    });
    try {
      await this.#doc.mutateBatched(
        (d) => {
          for (const c of writable(d, this.#clock())) {
            const p = taken.get(c.id)!;
            c.cooldown_until = p.until;
            if (p.at > c.updated_at) c.updated_at = p.at;
          }
        },
        (d) => {
          if (writable(d, this.#clock()).length === 0) throw NOTHING_TO_WRITE;
        },
      );
    } catch (error) {
      // Refused by the disk (or the document closed under it): kept for the next try.
      if (error !== NOTHING_TO_WRITE) return;
    }
    // A verdict noted while the write was on its way replaced its entry: that one stays.
    for (const [id, p] of taken) if (this.#entries.get(id) === p) this.#entries.delete(id);
  }
}
