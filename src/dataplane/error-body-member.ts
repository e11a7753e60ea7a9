/**
 * Error bodies are a few hundred bytes; a larger one is not parsed (its status rules), so that
 * no answer costs more than this to judge.
 */
const ERROR_BODY_PARSE_LIMIT = 64 * 1024;

/** The `error` object of a JSON error body (`{"error":{…}}`, the shape of Google's and OpenAI's), or undefined for any other body. */
export function errorMemberOf(body: Buffer): Record<string, unknown> | undefined {
  if (body.length > ERROR_BODY_PARSE_LIMIT) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const error = isObject(parsed) ? parsed['error'] : undefined;
  return isObject(error) ? error : undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
