import type { AuditStore } from '../config-store.ts';
import type { AuditRecord } from '../records.ts';
import type { JsonDocument } from './json-document.ts';

export interface AuditData {
  version: 1;
  next_id: number;
  entries: AuditRecord[];
}

export function emptyAudit(): AuditData {
  return { version: 1, next_id: 1, entries: [] };
}

export function checkAuditShape(data: unknown): string | undefined {
  const d = data as Partial<AuditData> | null;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return 'the top level is not an object';
  if (d.version !== 1) return `unsupported version ${JSON.stringify(d.version)}`;
  if (!Number.isInteger(d.next_id)) return 'next_id is not an integer';
  if (!Array.isArray(d.entries)) return 'entries is not a list';
  return undefined;
}

export class LowdbAuditStore implements AuditStore {
  readonly #doc: JsonDocument<AuditData>;

  constructor(doc: JsonDocument<AuditData>) {
    this.#doc = doc;
  }

  append(entry: Omit<AuditRecord, 'id'>): Promise<AuditRecord> {
    return this.#doc.mutate((d) => {
      const record: AuditRecord = { id: d.next_id++, ...structuredClone(entry) };
      d.entries.push(record);
      return structuredClone(record);
    });
  }

  async list(limit: number): Promise<AuditRecord[]> {
    return structuredClone(this.#doc.data.entries.slice(-limit).reverse());
  }
}
