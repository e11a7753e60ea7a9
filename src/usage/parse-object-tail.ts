/**
 * The members of a JSON object's text from `member` (a key with its quotes, `"usage"`; its
 * last occurrence) on, parsed without the members before it. Usage is one member near the end of a
 * response whose other members (choices, messages, ids) JSON.parse would build in full.
 * Undefined when the tail does not parse as the rest of the top-level object, or the key is
 * not there; the caller parses the whole text then.
 *
 * Only top-level members come out: `"key"` with its quotes cannot occur inside a JSON string
 * (quotes there are escaped), and the tail from a nested object's key holds the closing
 * brackets of every value around it, so `{` + tail is no single JSON object. A text that is
 * not JSON at all may still have a tail that is.
 */
export function parseObjectTail(text: string, member: string): Record<string, unknown> | undefined {
  const from = lastOccurrence(text, member);
  if (from === -1) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(`{${text.slice(from)}`);
  } catch {
    return undefined;
  }
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
}

/** lastIndexOf by forward searches: V8 searches backwards one position at a time, forwards far faster. */
function lastOccurrence(text: string, search: string): number {
  let at = text.indexOf(search);
  if (at === -1) return -1;
  for (let next = text.indexOf(search, at + 1); next !== -1; next = text.indexOf(search, at + 1)) at = next;
  return at;
}
