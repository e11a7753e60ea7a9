import type { SettingsStore } from '../config-store.ts';
import { DEFAULT_SETTINGS } from '../default-settings.ts';
import type { Settings } from '../records.ts';
import type { ConfigData } from './config-document.ts';
import { definedOnly } from '../defined-only.ts';
import type { JsonDocument } from './json-document.ts';

export class LowdbSettingsStore implements SettingsStore {
  readonly #doc: JsonDocument<ConfigData>;

  constructor(doc: JsonDocument<ConfigData>) {
    this.#doc = doc;
  }

  async get(): Promise<Settings> {
    return structuredClone({ ...DEFAULT_SETTINGS, ...this.#doc.data.settings });
  }

  save(items: Partial<Settings>): Promise<Settings> {
    return this.#doc.mutate((d) => {
      Object.assign(d.settings, definedOnly(items));
      return structuredClone({ ...DEFAULT_SETTINGS, ...d.settings });
    });
  }
}
