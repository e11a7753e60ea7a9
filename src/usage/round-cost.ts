/**
 * A sum of costs (USD) rounded to the 1e-10 USD each cost is rounded to (computeCost), so
 * that ten costs of 0.1 sum to 1, not 0.9999999999999999: a limit compares, and a report shows,
 * what was charged rather than float noise.
 */
export function roundCost(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

/** Two costs added on the 1e-10 USD grid: a running sum kept so does not drift from what was charged, however many it adds. */
export function addCost(a: number, b: number): number {
  return roundCost(a + b);
}

/** The usage with its cost sum rounded as each cost is (a sum of stored costs carries float noise). */
export function withRoundedCost<T extends { cost: number }>(usage: T): T {
  return { ...usage, cost: roundCost(usage.cost) };
}
