/** Rollups are kept per minute of created_at: UTC offsets are whole minutes, so a slot always falls in one hour or day bucket. */
export const SLOT_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Bounds used for an open end of a time range (created_at values are far inside them). */
export const EARLIEST = Number.MIN_SAFE_INTEGER;
export const LATEST = Number.MAX_SAFE_INTEGER;

export function slotOf(at: number): number {
  return Math.floor(at / SLOT_MS) * SLOT_MS;
}

export interface TimeRange {
  /** Inclusive. */
  from: number;
  /** Exclusive. */
  to: number;
}

/**
 * Splits [from, to) into the whole slots inside it, which rollups answer, and the parts of
 * the slots cut by an end that is not on a minute, which only the records can answer.
 */
export function splitBySlots(from: number | undefined, to: number | undefined): { whole: TimeRange | undefined; partial: TimeRange[] } {
  const low = from ?? EARLIEST;
  const high = to ?? LATEST;
  if (low >= high) return { whole: undefined, partial: [] };
  const wholeFrom = from === undefined ? EARLIEST : Math.ceil(from / SLOT_MS) * SLOT_MS;
  const wholeTo = to === undefined ? LATEST : Math.floor(to / SLOT_MS) * SLOT_MS;
  if (wholeFrom >= wholeTo) return { whole: undefined, partial: [{ from: low, to: high }] };
  const partial: TimeRange[] = [];
  if (low < wholeFrom) partial.push({ from: low, to: wholeFrom });
  if (wholeTo < high) partial.push({ from: wholeTo, to: high });
  return { whole: { from: wholeFrom, to: wholeTo }, partial };
}
