/** The `id` of a response object, or of the `response` a stream event carries. */
export function idOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as { id?: unknown; response?: { id?: unknown } };
  const id = v.response?.id ?? v.id;
  return typeof id === 'string' ? id : undefined;
}

export function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
