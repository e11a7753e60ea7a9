import type Database from 'better-sqlite3';
import { STORED_OBJECTS_KEPT, type StoredObject, type StoredObjectChange } from '../stored-object-store.ts';

/** Objects remembered between two prunes of the table: it holds fewer than STORED_OBJECTS_KEPT plus this many rows. */
const PRUNE_EVERY = 1024;

interface StoredObjectRow {
  key: string;
  group_id: number;
  credential_id: number;
  created_by: number | null;
  unbilled: number;
  upstream_model: string | null;
  external_model: string | null;
}

/**
 * The `stored_objects` table (log-schema.ts): a change is written in the transaction of the
 * batch that carries it. A remembered object is written again as a new row (REPLACE: a new,
 * highest `seq`), so `seq` orders them as the data plane's memory does, newest last; a billed
 * one keeps its row. Beyond STORED_OBJECTS_KEPT, the lowest seqs go.
 */
export class StoredObjectsTable {
  readonly #remember: Database.Statement;
  readonly #bill: Database.Statement;
  readonly #prune: Database.Statement;
  readonly #newest: Database.Statement;
  /** The first write prunes what earlier runs left beyond the bound. */
  #sincePrune = PRUNE_EVERY;

  constructor(db: Database.Database) {
    this.#remember = db.prepare(
      'INSERT OR REPLACE INTO stored_objects (key, group_id, credential_id, created_by, unbilled, upstream_model, external_model) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.#bill = db.prepare('UPDATE stored_objects SET unbilled = 0 WHERE key = ?');
    this.#prune = db.prepare('DELETE FROM stored_objects WHERE seq < (SELECT seq FROM stored_objects ORDER BY seq DESC LIMIT 1 OFFSET ?)');
    this.#newest = db.prepare('SELECT key, group_id, credential_id, created_by, unbilled, upstream_model, external_model FROM stored_objects ORDER BY seq DESC LIMIT ?');
  }

  /** Inside the caller's transaction. */
  apply(changes: readonly StoredObjectChange[]): void {
    for (const change of changes) {
      if (change.type === 'billed') {
        this.#bill.run(change.key);
        continue;
      }
      const o = change.object;
      this.#remember.run(o.key, o.groupId, o.credentialId, o.createdBy, o.unbilled ? 1 : 0, o.upstreamModel, o.externalModel);
      this.#sincePrune++;
    }
    if (this.#sincePrune < PRUNE_EVERY) return;
    this.#sincePrune = 0;
    this.#prune.run(STORED_OBJECTS_KEPT - 1);
  }

  /** The newest `limit` objects, oldest first. */
  newest(limit: number): StoredObject[] {
    const rows = this.#newest.all(limit) as StoredObjectRow[];
    const objects: StoredObject[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[rows.length - 1 - i]!;
      objects[i] = {
        key: r.key,
        groupId: r.group_id,
        credentialId: r.credential_id,
        createdBy: r.created_by,
        unbilled: r.unbilled === 1,
        upstreamModel: r.upstream_model,
        externalModel: r.external_model,
      };
    }
    return objects;
  }
}
