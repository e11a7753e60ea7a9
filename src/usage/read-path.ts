/** A dotted path split once: the usage tables' paths are read on every response. */
export type PathSegments = readonly string[];

export function pathSegments(path: string): PathSegments {
  return path.split('.');
}

/** Value at a path of plain JSON objects, or undefined. */
export function readSegments(value: unknown, segments: PathSegments): unknown {
  let current = value;
  for (let i = 0; i < segments.length; i++) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[segments[i]!];
  }
  return current;
}

/** A token count at a path: a finite number at least 0, else undefined. */
export function readCount(value: unknown, segments: PathSegments): number | undefined {
  const found = readSegments(value, segments);
  return typeof found === 'number' && Number.isFinite(found) && found >= 0 ? found : undefined;
}
