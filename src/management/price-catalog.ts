import type { Validator } from '../http/schema-validator.ts';
import type { ModelPrice } from '../usage/compute-cost.ts';
import type { PriceList } from '../generated/management/price-list.ts';
import bundled from './price-catalog.json' with { type: 'json' };

export interface PriceCatalogEntry {
  model: string;
  price: ModelPrice;
}

/**
 * The bundled catalog is a seed in the same format as a remote price list; the product names
 * no vendors, so real prices come from a sync URL or from manual updates.
 */
export const BUNDLED_PRICE_LIST: unknown = bundled;

export function toCatalogEntries(list: PriceList): PriceCatalogEntry[] {
  return list.prices.map(({ model, ...price }) => ({ model, price }));
}

export function parsePriceList(value: unknown, validate: Validator<PriceList>): PriceCatalogEntry[] {
  return toCatalogEntries(validate(value));
}
