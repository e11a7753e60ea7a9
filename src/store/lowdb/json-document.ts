import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { DataFile } from 'lowdb/node';
import { asConfigStoreUnavailable } from './config-store-unavailable.ts';
import { StoreFileError } from './store-file-error.ts';

/** Returns a description of what is wrong with the parsed content, or undefined when it is usable. */
export type ShapeCheck = (data: unknown) => string | undefined;

/**
 * Asked when a mutation is requested (in the caller's async context); a returned edit is
 * applied to the same draft after the mutation, so it reaches the disk in the same write.
 */
export type WriteStamp<T> = () => ((draft: T) => void) | undefined;

/**
 * One lowdb JSON file. Writes go through steno (temporary file + rename, so a crash never
 * leaves a half-written file in place) and are serialized here: each mutation works on a
 * copy that replaces the live data only once it is on disk, so a write that fails (a full disk)
 * leaves the data as the file still has it.
 */
export class JsonDocument<T extends object> {
  readonly file: string;
  readonly #db: Low<T>;
  #queue: Promise<unknown> = Promise.resolve();
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
          throw new StoreFileError(file, `${detail}; it may have been cut short by a crash or edited by hand`);
        }
        const problem = check(parsed);
        if (problem !== undefined) throw new StoreFileError(file, `unexpected content: ${problem}`);
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

  /** Changes with every successful mutation, so readers can cache what they derive from the data. */
  get generation(): number {
    return this.#generation;
  }

  mutate<R>(fn: (draft: T) => R): Promise<R> {
    if (this.#closed) return Promise.reject(new Error(`${this.file} is closed or opened read-only`));
    const stamp = this.#stamp?.();
    const run = this.#queue.then(async () => {
      const draft = structuredClone(this.#db.data);
      const result = fn(draft);
      stamp?.(draft);
      try {
        await this.#db.adapter.write(draft);
      } catch (error) {
        this.#lastWriteFailed = true;
        // steno's temporary file (`.<name>.tmp`), empty or cut short: the next write replaces it anyway.
        await rm(path.join(path.dirname(this.file), `.${path.basename(this.file)}.tmp`), { force: true }).catch(() => undefined);
        throw asConfigStoreUnavailable(error);
      }
      this.#lastWriteFailed = false;
      this.#db.data = draft;
      this.#generation++;
      return result;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#queue;
  }
}
