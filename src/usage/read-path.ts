/** Paths come from the usage tables, a few dozen in all: each is split once. */
const SEGMENTS = new Map<string, readonly string[]>();

function segmentsOf(path: string): readonly string[] {
  let segments = SEGMENTS.get(path);
  if (segments === undefined) {
    segments = path.split('.');
    SEGMENTS.set(path, segments);
  }
  return segments;
}

/** Value at a dotted path of plain JSON objects, or undefined. */
export function readPath(value: unknown, path: string): unknown {
  let current = value;
  for (const key of segmentsOf(path)) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export function readCount(value: unknown, path: string): number | undefined {
  const found = readPath(value, path);
  return typeof found === 'number' && Number.isFinite(found) && found >= 0 ? found : undefined;
}
