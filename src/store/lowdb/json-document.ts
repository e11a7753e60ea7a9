import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { DataFile } from 'lowdb/node';
import { asConfigStoreUnavailable } from './config-store-unavailable.ts';
import { RESTORE_OR_START_EMPTY, StoreFileError } from './store-file-error.ts';

/** Returns a description of what is wrong with the parsed content, or undefined when it is usable. */
export type ShapeCheck = (data: unknown) => string | undefined;

/**
 * Asked when a mutation is requested (in the caller's async context); a returned edit is
 * applied to the same draft after the mutation, so it reaches the disk in the same write.
 */
export type WriteStamp<T> = () => ((draft: T) => void) | undefined;

/** A mutation waiting for its turn, with what its caller awaits. */
interface Queued<T> {
  fn: (draft: T) => unknown;
  /** Set for mutations that may share a write; see mutateBatched. */
  precheck: ((data: Readonly<T>) => void) | undefined;
  batchable: boolean;
  stamp: ((draft: T) => void) | undefined;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * One lowdb JSON file. Writes go through steno (temporary file + rename, so a crash never
 * leaves a half-written file in place) and are serialized here, in the order asked: each
 * mutation works on a copy that replaces the live data only once it is on disk, so a write
 * that fails (a full disk) leaves the data as the file still has it.
 */
export class JsonDocument<T extends object> {
  readonly file: string;
  readonly #db: Low<T>;
  #waiting: Queued<T>[] = [];
  #draining: Promise<void> | undefined;
  #closed = false;
  #generation = 0;
  #lastWriteFailed = false;
  readonly #stamp: WriteStamp<T> | undefined;

  private constructor(file: string, db: Low<T>, stamp: WriteStamp<T> | undefined) {
    this.file = file;
    this.#db = db;
    this.#stamp = stamp;
  }

  /** `readOnly` never writes: a missing file reads as the defaults and mutations fail. */
  static async open<T extends object>(file: string, defaults: () => T, check: ShapeCheck, readOnly = false, stamp?: WriteStamp<T>): Promise<JsonDocument<T>> {
    const adapter = new DataFile<T>(file, {
      parse: (text) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (err) {
          const detail = text.trim() === '' ? 'the file is empty' : `not valid JSON (${(err as Error).message})`;
          throw new StoreFileError(file, `${detail}; it may have been cut short by a crash or edited by hand`, RESTORE_OR_START_EMPTY);
        }
        const problem = check(parsed);
        if (problem !== undefined) throw new StoreFileError(file, `unexpected content: ${problem}`, RESTORE_OR_START_EMPTY);
        return parsed as T;
      },
      stringify: (data) => `${JSON.stringify(data, null, 2)}\n`,
    });
    const db = new Low<T>(adapter, defaults());
    const existing = await adapter.read();
    const doc = new JsonDocument(file, db, stamp);
    doc.#closed = readOnly;
    if (existing !== null) db.data = existing;
    else if (!readOnly) await db.write();
    return doc;
  }

  get data(): Readonly<T> {
    return this.#db.data;
  }

  /** Whether the last write failed; the next one that succeeds clears it. */
  get lastWriteFailed(): boolean {
    return this.#lastWriteFailed;
  }

  /** Changes with every successful write, so readers can cache what they derive from the data. */
  get generation(): number {
    return this.#generation;
  }

  mutate<R>(fn: (draft: T) => R): Promise<R> {
    return this.#enqueue(fn, undefined, false);
  }

  /**
   * As mutate, for a mutation whose fn either throws before editing the draft or edits it
   * without throwing: consecutive such mutations waiting their turn are applied in order to one
   * copy and written once (under a storm of them each would otherwise copy, serialize and write
   * the whole file). Each caller still gets its own result or error, only once the write is
   * done. `precheck` refuses (throws) before fn runs, on the data as the earlier mutations of
   * the turn left it (the live data until one edits): fn need not check again, and a turn where
   * every one is refused copies nothing.
   */
  mutateBatched<R>(fn: (draft: T) => R, precheck?: (data: Readonly<T>) => void): Promise<R> {
    return this.#enqueue(fn, precheck, true);
  }

  #enqueue<R>(fn: (draft: T) => R, precheck: ((data: Readonly<T>) => void) | undefined, batchable: boolean): Promise<R> {
    if (this.#closed) return Promise.reject(new Error(`${this.file} is closed or opened read-only`));
    const stamp = this.#stamp?.();
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ fn, precheck, batchable, stamp, resolve: resolve as (result: unknown) => void, reject });
      // Started a microtask later, as a queued mutation always has: a caller's own synchronous code runs first.
      this.#draining ??= Promise.resolve().then(() => this.#drain());
    });
  }

  async #drain(): Promise<void> {
    while (this.#waiting.length > 0) {
      const first = this.#waiting[0]!;
      const length = first.batchable ? this.#waiting.findIndex((m) => !m.batchable) : 1;
      await this.#commit(this.#waiting.splice(0, length === -1 ? this.#waiting.length : length));
    }
    this.#draining = undefined;
  }

  /** Applies `turn` to one copy in order and writes it once; settles every mutation in it, in turn order. */
  async #commit(turn: Queued<T>[]): Promise<void> {
    let draft: T | undefined;
    let edited = false;
    // Refused against a draft holding others' edits (`afterEdits`): that answer stands only if those edits land.
    const outcomes: Array<{ m: Queued<T>; applied: true; result: unknown } | { m: Queued<T>; applied: false; error: unknown; afterEdits: boolean }> = [];
    for (const m of turn) {
      try {
        m.precheck?.(draft ?? this.#db.data);
        draft ??= structuredClone(this.#db.data);
        const result = m.fn(draft);
        m.stamp?.(draft);
        outcomes.push({ m, applied: true, result });
        edited = true;
      } catch (error) {
        outcomes.push({ m, applied: false, error, afterEdits: edited });
      }
    }
    let unavailable: { error: unknown } | undefined;
    if (edited) {
      try {
        await this.#db.adapter.write(draft!);
        this.#lastWriteFailed = false;
        this.#db.data = draft!;
        this.#generation++;
      } catch (error) {
        this.#lastWriteFailed = true;
        // steno's temporary file (`.<name>.tmp`), empty or cut short: the next write replaces it anyway.
        await rm(path.join(path.dirname(this.file), `.${path.basename(this.file)}.tmp`), { force: true }).catch(() => undefined);
        unavailable = { error: asConfigStoreUnavailable(error) };
      }
    }
    for (const o of outcomes) {
      if (unavailable !== undefined && (o.applied || o.afterEdits)) o.m.reject(unavailable.error);
      else if (o.applied) o.m.resolve(o.result);
      else o.m.reject(o.error);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#draining;
  }
}
