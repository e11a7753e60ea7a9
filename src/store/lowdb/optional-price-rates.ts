import type { ModelPriceBody } from '../../generated/management/model-price.ts';
import modelPriceSchema from '../../management/schemas/model-price.json' with { type: 'json' };
import type { ModelPrice } from '../../usage/compute-cost.ts';

/** Whether two types name the same properties. */
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;

// A rate the schema has and computeCost's ModelPrice lacks would be stored and never priced.
true satisfies SameKeys<ModelPrice, ModelPriceBody>;

/** A model price's optional rates, as its schema has them: every property it does not require. */
export const OPTIONAL_PRICE_RATES = Object.keys(modelPriceSchema.properties).filter((name) => !(modelPriceSchema.required as readonly string[]).includes(name)) as readonly (keyof ModelPrice)[];
