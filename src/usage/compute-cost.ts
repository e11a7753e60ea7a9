import { roundCost } from './round-cost.ts';
import type { TokenUsage } from './token-usage.ts';

/** A model price in USD per million tokens. */
export interface ModelPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  /** Price of cached input; uncached input price when absent. */
  cached_input_per_mtok?: number;
  /** Price of input written to a prompt cache; uncached input price when absent. */
  cache_write_per_mtok?: number;
}

const PER_TOKEN = 1 / 1_000_000;

/**
 * Cost in USD; 0 when the model has no price, and 0 too when the product is no finite number
 * (as for a missing price: not computable), since one infinity would make every sum over it
 * and the key's cost quota unusable. Rounded to 1e-10 USD to drop float noise. Cache reads and
 * writes are parts of the input: clamped so that together they never exceed it (reads first).
 */
export function computeCost(usage: TokenUsage, price: ModelPrice | undefined): number {
  if (price === undefined) return 0;
  const cached = Math.min(usage.cached_tokens, usage.input_tokens);
  const written = Math.min(usage.cache_write_tokens ?? 0, usage.input_tokens - cached);
  const uncached = usage.input_tokens - cached - written;
  const cachedPrice = price.cached_input_per_mtok ?? price.input_per_mtok;
  const writePrice = price.cache_write_per_mtok ?? price.input_per_mtok;
  const usd =
    (uncached * price.input_per_mtok + cached * cachedPrice + written * writePrice + usage.output_tokens * price.output_per_mtok) *
    PER_TOKEN;
  const cost = roundCost(usd);
  return Number.isFinite(cost) ? cost : 0;
}
