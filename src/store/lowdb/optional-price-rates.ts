import modelPriceSchema from '../../management/schemas/model-price.json' with { type: 'json' };
import type { ModelPrice } from '../../usage/compute-cost.ts';

/** A model price's optional rates, as its schema has them: every property it does not require. */
export const OPTIONAL_PRICE_RATES = Object.keys(modelPriceSchema.properties).filter((name) => !(modelPriceSchema.required as readonly string[]).includes(name)) as readonly (keyof ModelPrice)[];
