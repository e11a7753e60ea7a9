/**
 * A dotted path split once: the usage tables' paths are read on every response. A segment of
 * digits is a number, an array index (`choices.0.usage`); any other names an object member.
 */
export type PathSegments = readonly (string | number)[];

export function pathSegments(path: string): PathSegments {
  return path.split('.').map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
}

/** Value at a path of plain JSON objects (and arrays, at number segments), or undefined. */
export function readSegments(value: unknown, segments: PathSegments): unknown {
  let current = value;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (current === null || typeof current !== 'object' || Array.isArray(current) !== (typeof segment === 'number')) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

/**
 * A token count: a safe integer at least 0. Anything else an upstream reports (1.5, 1e300)
 * is read as no count, so no record, sum or cost quota ever holds a fraction or an infinity.
 */
export function isTokenCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** A token count at a path (isTokenCount), else undefined. */
export function readCount(value: unknown, segments: PathSegments): number | undefined {
  const found = readSegments(value, segments);
  return isTokenCount(found) ? found : undefined;
}
