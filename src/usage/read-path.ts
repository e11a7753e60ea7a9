/** Value at a dotted path of plain JSON objects, or undefined. */
export function readPath(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export function readCount(value: unknown, path: string): number | undefined {
  const found = readPath(value, path);
  return typeof found === 'number' && Number.isFinite(found) && found >= 0 ? found : undefined;
}
