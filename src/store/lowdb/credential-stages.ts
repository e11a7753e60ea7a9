import type { Clock } from '../clock.ts';
import type { CredentialStagePatch, CredentialStageStore, NewCredentialStage } from '../config-store.ts';
import type { CredentialStageRecord } from '../records.ts';
import type { ConfigData } from './config-document.ts';
import { definedOnly } from '../defined-only.ts';
import type { JsonDocument } from './json-document.ts';
import { requireGroups } from './require-groups.ts';

export class LowdbCredentialStageStore implements CredentialStageStore {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #clock: Clock;

  constructor(doc: JsonDocument<ConfigData>, clock: Clock) {
    this.#doc = doc;
    this.#clock = clock;
  }

  async list(): Promise<CredentialStageRecord[]> {
    return structuredClone(this.#doc.data.credential_stages);
  }

  async get(id: number): Promise<CredentialStageRecord | undefined> {
    const s = this.#doc.data.credential_stages.find((x) => x.id === id);
    return s && structuredClone(s);
  }

  create(input: NewCredentialStage): Promise<CredentialStageRecord> {
    return this.#doc.mutate((d) => {
      requireGroups(d, [input.group_id]);
      const now = new Date(this.#clock()).toISOString();
      const stage: CredentialStageRecord = {
        id: d.next_id.credential_stage++,
        group_id: input.group_id,
        kind: input.kind,
        flow: input.flow,
        state: 'awaiting_authorization',
        authorization: input.authorization,
        error: null,
        credential_id: null,
        expires_at: input.expires_at,
        created_at: now,
        updated_at: now,
      };
      d.credential_stages.push(stage);
      return structuredClone(stage);
    });
  }

  update(id: number, patch: CredentialStagePatch): Promise<CredentialStageRecord | undefined> {
    return this.#doc.mutate((d) => {
      const s = d.credential_stages.find((x) => x.id === id);
      if (!s) return undefined;
      Object.assign(s, definedOnly(patch));
      s.updated_at = new Date(this.#clock()).toISOString();
      return structuredClone(s);
    });
  }

  delete(id: number): Promise<boolean> {
    return this.#doc.mutate((d) => {
      const before = d.credential_stages.length;
      d.credential_stages = d.credential_stages.filter((x) => x.id !== id);
      return d.credential_stages.length !== before;
    });
  }
}
