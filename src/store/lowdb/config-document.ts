import type { AccessKeyRecord, CredentialRecord, CredentialStageRecord, GroupRecord, ModelPriceRecord, Settings } from '../records.ts';
import { configRecordsProblem, type ConfigLists } from './check-config-records.ts';
import { storedSettingsProblem } from './stored-settings-problem.ts';

export interface StoredCredential extends CredentialRecord {
  /** Encrypted JSON of the secret fields. */
  sealed: string;
  /** Keyed hash of kind and all values, to recognize a duplicate without decrypting. */
  fingerprint: string;
  /**
   * Who disabled it: an upstream's verdict (a rotation re-enables it) or the operator (it stays).
   * Absent in rows stored before it existed; see disabledByUpstream.
   */
  disabled_by?: 'upstream' | 'operator';
}

export interface StoredAccessKey extends AccessKeyRecord {
  sealed: string;
  value_index: string;
}

export interface ConfigData {
  version: 1;
  next_id: { group: number; credential: number; access_key: number; credential_stage: number };
  groups: GroupRecord[];
  credentials: StoredCredential[];
  access_keys: StoredAccessKey[];
  settings: Partial<Settings>;
  model_prices: ModelPriceRecord[];
  credential_stages: CredentialStageRecord[];
  /**
   * Idempotency-Keys whose operation wrote this file, written with the change itself so a
   * crash before the result is stored still shows that the change was applied. Internal.
   */
  idempotency_journal?: IdempotencyNote[];
}

interface IdempotencyNote {
  key: string;
  /** Time of the first write under the key (ms). */
  at: number;
}

export function emptyConfig(): ConfigData {
  return {
    version: 1,
    next_id: { group: 1, credential: 1, access_key: 1, credential_stage: 1 },
    groups: [],
    credentials: [],
    access_keys: [],
    settings: {},
    model_prices: [],
    credential_stages: [],
  };
}

export function checkConfigShape(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'the top level is not an object';
  const d = data as Record<string, unknown>;
  if (d.version !== 1) return `unsupported version ${JSON.stringify(d.version)}`;
  const ids = d.next_id as Record<string, unknown> | undefined;
  if (typeof ids !== 'object' || ids === null) return 'next_id is missing';
  for (const name of ['group', 'credential', 'access_key', 'credential_stage']) {
    if (!Number.isInteger(ids[name])) return `next_id.${name} is not an integer`;
  }
  for (const name of ['groups', 'credentials', 'access_keys', 'model_prices', 'credential_stages']) {
    if (!Array.isArray(d[name])) return `${name} is not a list`;
  }
  if (d.idempotency_journal !== undefined && !Array.isArray(d.idempotency_journal)) return 'idempotency_journal is not a list';
  if (typeof d.settings !== 'object' || d.settings === null || Array.isArray(d.settings)) return 'settings is not an object';
  // A hand-edited value the API would refuse ("abc", 0 attempts, a record without its models)
  // would otherwise fail requests.
  return storedSettingsProblem(d.settings) ?? configRecordsProblem(d as unknown as ConfigLists);
}
