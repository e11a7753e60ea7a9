import { credentialLocation } from '../credential-location.ts';
import { endAddressCooldowns } from './end-address-cooldowns.ts';
import type { Clock } from '../clock.ts';
import { definedOnly } from '../defined-only.ts';
import type { GroupPatch, GroupStore, NewGroup } from '../config-store.ts';
import type { GroupModel, GroupRecord } from '../records.ts';
import type { ConfigData } from './config-document.ts';
import type { JsonDocument } from './json-document.ts';

export class LowdbGroupStore implements GroupStore {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #clock: Clock;

  constructor(doc: JsonDocument<ConfigData>, clock: Clock) {
    this.#doc = doc;
    this.#clock = clock;
  }

  async list(): Promise<GroupRecord[]> {
    return this.#doc.data.groups.map(copyOf);
  }

  async get(id: number): Promise<GroupRecord | undefined> {
    const found = this.#doc.data.groups.find((g) => g.id === id);
    return found && copyOf(found);
  }

  async listExposingModel(external: string): Promise<GroupRecord[]> {
    return this.#doc.data.groups.filter((g) => g.models.some((m) => m.external === external)).map(copyOf);
  }

  create(input: NewGroup): Promise<GroupRecord> {
    return this.#doc.mutate((d) => {
      const now = new Date(this.#clock()).toISOString();
      const group: GroupRecord = {
        id: d.next_id.group++,
        name: input.name,
        description: input.description ?? '',
        channel: input.channel,
        base_url: input.base_url ?? null,
        versionless_api: input.versionless_api ?? false,
        proxy_url: input.proxy_url ?? null,
        priority: input.priority ?? 0,
        weight: input.weight ?? 1,
        enabled: input.enabled ?? true,
        models: input.models ?? [],
        created_at: now,
        updated_at: now,
      };
      d.groups.push(group);
      return structuredClone(group);
    });
  }

  update(id: number, patch: GroupPatch): Promise<GroupRecord | undefined> {
    return this.#edit(id, (g, d) => {
      const before = { base_url: g.base_url, versionless_api: g.versionless_api === true, proxy_url: g.proxy_url };
      Object.assign(g, definedOnly(patch));
      const baseUrlChanged = g.base_url !== before.base_url;
      // Every credential's upstream URL follows it, its own base URL's too.
      const pathsChanged = (g.versionless_api === true) !== before.versionless_api;
      const proxyUrlChanged = g.proxy_url !== before.proxy_url;
      if (!baseUrlChanged && !pathsChanged && !proxyUrlChanged) return;
      const follows = (c: ConfigData['credentials'][number]) =>
        c.group_id === id && (pathsChanged || (baseUrlChanged && credentialLocation(c.kind, c.fields) === null) || (proxyUrlChanged && c.proxy_url === null));
      endAddressCooldowns(d, follows, new Date(this.#clock()).toISOString());
    });
  }

  setModels(id: number, models: GroupModel[]): Promise<GroupRecord | undefined> {
    return this.#edit(id, (g) => {
      g.models = models.map((m) => ({ external: m.external, upstream: m.upstream }));
    });
  }

  delete(id: number): Promise<boolean> {
    return this.#doc.mutate((d) => {
      const before = d.groups.length;
      d.groups = d.groups.filter((g) => g.id !== id);
      if (d.groups.length === before) return false;
      d.credentials = d.credentials.filter((c) => c.group_id !== id);
      d.credential_stages = d.credential_stages.filter((s) => s.group_id !== id);
      for (const key of d.access_keys) {
        if (key.groups !== null) key.groups = key.groups.filter((g) => g !== id);
      }
      return true;
    });
  }

  #edit(id: number, change: (g: GroupRecord, d: ConfigData) => void): Promise<GroupRecord | undefined> {
    return this.#doc.mutate((d) => {
      const g = d.groups.find((x) => x.id === id);
      if (!g) return undefined;
      change(g, d);
      g.updated_at = new Date(this.#clock()).toISOString();
      return copyOf(g);
    });
  }
}

/** A stored Group as the program sees it: rows stored before versionless_api existed lack it (false). */
function copyOf(g: GroupRecord): GroupRecord {
  const copy = structuredClone(g);
  copy.versionless_api ??= false;
  return copy;
}
