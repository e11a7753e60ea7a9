/** A seeded uniform source in [0, 1) (mulberry32): the same cases on every run, so a failure replays. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** `seeded`, with whole numbers in [low, high], picks and chances drawn from it. */
export function seededRandom(seed: number) {
  const next = seeded(seed);
  const int = (low: number, high: number): number => low + Math.floor(next() * (high - low + 1));
  const pick = <T>(values: readonly T[]): T => values[int(0, values.length - 1)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}

export type SeededRandom = ReturnType<typeof seededRandom>;
