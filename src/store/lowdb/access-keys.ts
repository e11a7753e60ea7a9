import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { AccessKeyPatch, AccessKeyStore, AccessKeyWithValue, NewAccessKey } from '../config-store.ts';
import { maskSecret } from '../mask.ts';
import type { AccessKeyRecord } from '../records.ts';
import type { ConfigData, StoredAccessKey } from './config-document.ts';
import { definedOnly } from '../defined-only.ts';
import type { JsonDocument } from './json-document.ts';
import { requireGroups } from './require-groups.ts';
import type { SecretBox } from './secret-box.ts';

const INDEX_PURPOSE = 'access-key';

export function newAccessKeyValue(): string {
  return `sy-${randomBytes(32).toString('base64url')}`;
}

export class LowdbAccessKeyStore implements AccessKeyStore {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #box: SecretBox;
  readonly #clock: Clock;
  // Rebuilt when the document is replaced by a write (copy-on-write changes its identity).
  #index: { of: readonly StoredAccessKey[]; byHash: Map<string, StoredAccessKey> } | undefined;

  constructor(doc: JsonDocument<ConfigData>, box: SecretBox, clock: Clock) {
    this.#doc = doc;
    this.#box = box;
    this.#clock = clock;
  }

  async list(): Promise<AccessKeyRecord[]> {
    return this.#doc.data.access_keys.map(toRecord);
  }

  async ids(): Promise<number[]> {
    return this.#doc.data.access_keys.map((k) => k.id);
  }

  async get(id: number): Promise<AccessKeyRecord | undefined> {
    const k = this.#doc.data.access_keys.find((x) => x.id === id);
    return k && toRecord(k);
  }

  async findByValue(value: string): Promise<AccessKeyRecord | undefined> {
    const keys = this.#doc.data.access_keys;
    if (this.#index?.of !== keys) this.#index = { of: keys, byHash: new Map(keys.map((k) => [k.value_index, k])) };
    const k = this.#index.byHash.get(this.#box.index(INDEX_PURPOSE, value));
    return k && toRecord(k);
  }

  create(input: NewAccessKey): Promise<AccessKeyWithValue> {
    const value = newAccessKeyValue();
    return this.#doc.mutate((d) => {
      requireGroups(d, input.groups ?? []);
      const now = new Date(this.#clock()).toISOString();
      const id = d.next_id.access_key++;
      const stored: StoredAccessKey = {
        id,
        name: input.name,
        masked: maskSecret(value),
        protocols: input.protocols,
        groups: input.groups ?? null,
        models: input.models ?? null,
        record_request_body: input.record_request_body ?? false,
        quota: input.quota ?? null,
        expires_at: input.expires_at ?? null,
        enabled: input.enabled ?? true,
        created_at: now,
        updated_at: now,
        rotated_at: null,
        sealed: this.#box.encrypt(value, sealContext(id)),
        value_index: this.#box.index(INDEX_PURPOSE, value),
      };
      d.access_keys.push(stored);
      return { record: toRecord(stored), value };
    });
  }

  update(id: number, patch: AccessKeyPatch): Promise<AccessKeyRecord | undefined> {
    return this.#doc.mutate((d) => {
      const k = d.access_keys.find((x) => x.id === id);
      if (!k) return undefined;
      requireGroups(d, patch.groups ?? []);
      Object.assign(k, definedOnly(patch));
      k.updated_at = new Date(this.#clock()).toISOString();
      return toRecord(k);
    });
  }

  rotate(id: number): Promise<AccessKeyWithValue | undefined> {
    const value = newAccessKeyValue();
    return this.#doc.mutate((d) => {
      const k = d.access_keys.find((x) => x.id === id);
      if (!k) return undefined;
      const now = new Date(this.#clock()).toISOString();
      k.sealed = this.#box.encrypt(value, sealContext(id));
      k.value_index = this.#box.index(INDEX_PURPOSE, value);
      k.masked = maskSecret(value);
      k.rotated_at = now;
      k.updated_at = now;
      return { record: toRecord(k), value };
    });
  }

  async reveal(id: number): Promise<string | undefined> {
    const k = this.#doc.data.access_keys.find((x) => x.id === id);
    return k && this.#box.decrypt(k.sealed, sealContext(id));
  }

  delete(id: number): Promise<boolean> {
    return this.#doc.mutate((d) => {
      const before = d.access_keys.length;
      d.access_keys = d.access_keys.filter((k) => k.id !== id);
      return d.access_keys.length !== before;
    });
  }
}

function sealContext(id: number): string {
  return `access-key:${id}`;
}

function toRecord(k: StoredAccessKey): AccessKeyRecord {
  const { sealed: _sealed, value_index: _index, ...record } = k;
  return structuredClone(record);
}
