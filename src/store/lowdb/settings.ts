import type { SettingsStore } from '../config-store.ts';
import { DEFAULT_SETTINGS } from '../default-settings.ts';
import type { Settings } from '../records.ts';
import type { ConfigData } from './config-document.ts';
import { definedOnly } from '../defined-only.ts';
import type { Clock } from '../clock.ts';
import { CHANNELS, type ChannelId } from '../../generated/index.ts';
import { endAddressCooldowns } from './end-address-cooldowns.ts';
import type { JsonDocument } from './json-document.ts';

export class LowdbSettingsStore implements SettingsStore {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #clock: Clock;

  constructor(doc: JsonDocument<ConfigData>, clock: Clock) {
    this.#doc = doc;
    this.#clock = clock;
  }

  async get(): Promise<Settings> {
    return structuredClone({ ...DEFAULT_SETTINGS, ...this.#doc.data.settings });
  }

  save(items: Partial<Settings>): Promise<Settings> {
    return this.#doc.mutate((d) => {
      const proxyBefore = d.settings.proxy_url ?? null;
      Object.assign(d.settings, definedOnly(items));
      // As a Group's new proxy: the credentials that go through the global one (none of their
      // own, none of their Group's, a channel that takes a managed proxy).
      if ((d.settings.proxy_url ?? null) !== proxyBefore) {
        const viaGlobal = new Set(d.groups.filter((g) => g.proxy_url === null && CHANNELS[g.channel as ChannelId]?.proxy === true).map((g) => g.id));
        endAddressCooldowns(d, (c) => c.proxy_url === null && viaGlobal.has(c.group_id), new Date(this.#clock()).toISOString());
      }
      return structuredClone({ ...DEFAULT_SETTINGS, ...d.settings });
    });
  }
}
