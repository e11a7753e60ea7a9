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
  /** Price of audio input; uncached input price when absent. */
  audio_input_per_mtok?: number;
  /** Price of audio output; output price when absent. */
  audio_output_per_mtok?: number;
  /** Price of image input; uncached input price when absent. */
  image_input_per_mtok?: number;
}

const PER_TOKEN = 1 / 1_000_000;

/**
 * Cost in USD; 0 when the model has no price, and 0 too when the product is no finite number
 * (as for a missing price: not computable), since one infinity would make every sum over it
 * and the key's cost quota unusable. Rounded to 1e-10 USD to drop float noise.
 *
 * The input's parts are taken in this order, each clamped to what the ones before left: cache
 * reads (at the cached price, whatever their modality), cache writes, audio, images; the rest
 * is at the input price. The output's audio part is clamped to the output. So the parts never
 * exceed their whole. A cached audio token is counted as cached and as audio: it is priced once,
 * as cached, and the audio part is the audio count less the cached audio the upstream reported.
 */
export function computeCost(usage: TokenUsage, price: ModelPrice | undefined): number {
  if (price === undefined) return 0;
  const input = usage.input_tokens;
  const cached = Math.min(usage.cached_tokens, input);
  const written = Math.min(usage.cache_write_tokens ?? 0, input - cached);
  const uncachedAudio = (usage.audio_input_tokens ?? 0) - Math.min(usage.cached_audio_tokens ?? 0, cached);
  const audioIn = Math.max(0, Math.min(uncachedAudio, input - cached - written));
  const imageIn = Math.min(usage.image_input_tokens ?? 0, input - cached - written - audioIn);
  const plainIn = input - cached - written - audioIn - imageIn;
  const audioOut = Math.min(usage.audio_output_tokens ?? 0, usage.output_tokens);
  const plainOut = usage.output_tokens - audioOut;
  const inputPrice = price.input_per_mtok;
  const usd =
    (plainIn * inputPrice +
      cached * (price.cached_input_per_mtok ?? inputPrice) +
      written * (price.cache_write_per_mtok ?? inputPrice) +
      audioIn * (price.audio_input_per_mtok ?? inputPrice) +
      imageIn * (price.image_input_per_mtok ?? inputPrice) +
      plainOut * price.output_per_mtok +
      audioOut * (price.audio_output_per_mtok ?? price.output_per_mtok)) *
    PER_TOKEN;
  const cost = roundCost(usd);
  return Number.isFinite(cost) ? cost : 0;
}
