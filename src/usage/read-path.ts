/**
 * A dotted path split once: the usage tables' paths are read on every response. A segment of
 * digits is a number, an array index (`choices.0.usage`); `name=value` picks the first element
 * of an array that is an object whose member `name` is the string `value` (Gemini's per-modality
 * counts: `promptTokensDetails.modality=AUDIO.tokenCount`); any other names an object member.
 */
export type PathSegments = readonly (string | number | ElementWhere)[];

/** An array element picked by one of its members' values. */
interface ElementWhere {
  readonly member: string;
  readonly equals: string;
}

export function pathSegments(path: string): PathSegments {
  return path.split('.').map((segment) => {
    if (/^\d+$/.test(segment)) return Number(segment);
    const at = segment.indexOf('=');
    return at > 0 ? { member: segment.slice(0, at), equals: segment.slice(at + 1) } : segment;
  });
}

/** Value at a path of plain JSON objects (and arrays, at number and `name=value` segments), or undefined. */
export function readSegments(value: unknown, segments: PathSegments): unknown {
  let current = value;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (current === null || typeof current !== 'object' || Array.isArray(current) !== (typeof segment !== 'string')) return undefined;
    current = typeof segment === 'object' ? elementWhere(current as unknown[], segment) : (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

function elementWhere(elements: readonly unknown[], where: ElementWhere): unknown {
  for (const element of elements) {
    if (element !== null && typeof element === 'object' && (element as Record<string, unknown>)[where.member] === where.equals) return element;
  }
  return undefined;
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
