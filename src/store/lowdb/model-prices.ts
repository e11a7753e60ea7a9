import type { Clock } from '../clock.ts';
import type { ModelPriceStore } from '../config-store.ts';
import type { ModelPrice } from '../../usage/compute-cost.ts';
import type { ModelPriceRecord, PriceSource } from '../records.ts';
import type { ConfigData } from './config-document.ts';
import type { JsonDocument } from './json-document.ts';
import { OPTIONAL_PRICE_RATES } from './optional-price-rates.ts';

export class LowdbModelPriceStore implements ModelPriceStore {
  readonly #doc: JsonDocument<ConfigData>;
  readonly #clock: Clock;

  constructor(doc: JsonDocument<ConfigData>, clock: Clock) {
    this.#doc = doc;
    this.#clock = clock;
  }

  async list(): Promise<ModelPriceRecord[]> {
    return structuredClone(this.#doc.data.model_prices);
  }

  async get(model: string): Promise<ModelPriceRecord | undefined> {
    const p = this.#doc.data.model_prices.find((x) => x.model === model);
    return p && structuredClone(p);
  }

  async put(model: string, price: ModelPrice, source: PriceSource): Promise<ModelPriceRecord> {
    await this.#doc.mutate((d) => this.#upsert(d, [{ model, price }], source));
    return (await this.get(model)) as ModelPriceRecord;
  }

  putMany(entries: ReadonlyArray<{ model: string; price: ModelPrice }>, source: Exclude<PriceSource, 'manual'>): Promise<{ added: number; updated: number; kept_manual: number }> {
    return this.#doc.mutate((d) => {
      // Read in the write itself: a manual price whose write was queued before this one is seen.
      const manual = new Set(d.model_prices.filter((p) => p.source === 'manual').map((p) => p.model));
      // A model named twice is priced by its last entry and counted once, as a model.
      const byModel = [...new Map(entries.map((e) => [e.model, e])).values()];
      const applicable = byModel.filter((e) => !manual.has(e.model));
      return { ...this.#upsert(d, applicable, source), kept_manual: byModel.length - applicable.length };
    });
  }

  #upsert(d: ConfigData, entries: ReadonlyArray<{ model: string; price: ModelPrice }>, source: PriceSource): { added: number; updated: number } {
    const now = new Date(this.#clock()).toISOString();
    let added = 0;
    let updated = 0;
    for (const { model, price } of entries) {
      const record: ModelPriceRecord = { model, input_per_mtok: price.input_per_mtok, output_per_mtok: price.output_per_mtok, source, updated_at: now };
      for (const rate of OPTIONAL_PRICE_RATES) if (price[rate] !== undefined) record[rate] = price[rate];
      const i = d.model_prices.findIndex((x) => x.model === model);
      if (i < 0) {
        d.model_prices.push(record);
        added++;
      } else {
        d.model_prices[i] = record;
        updated++;
      }
    }
    d.model_prices.sort((a, b) => a.model.localeCompare(b.model));
    return { added, updated };
  }

  delete(model: string): Promise<boolean> {
    return this.#doc.mutate((d) => {
      const before = d.model_prices.length;
      d.model_prices = d.model_prices.filter((x) => x.model !== model);
      return d.model_prices.length !== before;
    });
  }
}
