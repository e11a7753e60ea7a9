import type { IdempotencyStore } from '../config-store.ts';
import type { IdempotencyRecord } from '../records.ts';
import type { ConfigData } from './config-document.ts';
import { underIdempotencyKey } from './idempotency-journal.ts';
import type { JsonDocument } from './json-document.ts';

export interface IdempotencyData {
  version: 1;
  records: Record<string, IdempotencyRecord>;
}

export function emptyIdempotency(): IdempotencyData {
  return { version: 1, records: {} };
}

export function checkIdempotencyShape(data: unknown): string | undefined {
  const d = data as Partial<IdempotencyData> | null;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return 'the top level is not an object';
  if (d.version !== 1) return `unsupported version ${JSON.stringify(d.version)}`;
  if (typeof d.records !== 'object' || d.records === null || Array.isArray(d.records)) return 'records is not an object';
  return undefined;
}

/** Records in idempotency.json; the notes of which keys changed the configuration live in config.json (see idempotency-journal.ts). */
export class LowdbIdempotencyStore implements IdempotencyStore {
  readonly #doc: JsonDocument<IdempotencyData>;
  readonly #config: JsonDocument<ConfigData>;

  constructor(doc: JsonDocument<IdempotencyData>, config: JsonDocument<ConfigData>) {
    this.#doc = doc;
    this.#config = config;
  }

  async get(key: string): Promise<IdempotencyRecord | undefined> {
    const r = Object.hasOwn(this.#doc.data.records, key) ? this.#doc.data.records[key] : undefined;
    return r && structuredClone(r);
  }

  async put(record: IdempotencyRecord): Promise<void> {
    await this.#doc.mutate((d) => {
      d.records[record.key] = structuredClone(record);
    });
  }

  async delete(key: string): Promise<void> {
    if (!Object.hasOwn(this.#doc.data.records, key)) return;
    await this.#doc.mutate((d) => {
      delete d.records[key];
    });
  }

  async prune(now: number, resultTtlMs: number, recordTtlMs: number): Promise<void> {
    const stale = Object.values(this.#doc.data.records).some((r) => now - r.created_at >= recordTtlMs || (r.result !== null && now - r.created_at >= resultTtlMs));
    if (stale) {
      await this.#doc.mutate((d) => {
        for (const [key, r] of Object.entries(d.records)) {
          if (now - r.created_at >= recordTtlMs) delete d.records[key];
          else if (now - r.created_at >= resultTtlMs) r.result = null;
        }
      });
    }
    if ((this.#config.data.idempotency_journal ?? []).some((note) => now - note.at >= recordTtlMs)) {
      await this.#config.mutate((d) => {
        d.idempotency_journal = (d.idempotency_journal ?? []).filter((note) => now - note.at < recordTtlMs);
      });
    }
  }

  noteChanges<R>(key: string, operation: () => Promise<R>): Promise<R> {
    return underIdempotencyKey(key, operation);
  }

  async changedAt(key: string): Promise<number | undefined> {
    return this.#config.data.idempotency_journal?.find((note) => note.key === key)?.at;
  }
}
