import t from 'tap';
import { computeCost } from '../../src/usage/index.ts';

t.test('prices input, cached input and output per million tokens', async (t) => {
  const usage = { input_tokens: 1_000_000, output_tokens: 500_000, cached_tokens: 200_000, reasoning_tokens: 100_000 };
  t.equal(computeCost(usage, { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 }), 1.6 + 0.1 + 4);
});

t.test('cached input falls back to the input price', async (t) => {
  const usage = { input_tokens: 1000, output_tokens: 0, cached_tokens: 400, reasoning_tokens: 0 };
  t.equal(computeCost(usage, { input_per_mtok: 3, output_per_mtok: 15 }), 0.003);
});

t.test('no price, no cost; small counts keep precision', async (t) => {
  const usage = { input_tokens: 7, output_tokens: 3, cached_tokens: 0, reasoning_tokens: 0 };
  t.equal(computeCost(usage, undefined), 0);
  t.equal(computeCost(usage, { input_per_mtok: 0.15, output_per_mtok: 0.6 }), 0.00000285);
});
