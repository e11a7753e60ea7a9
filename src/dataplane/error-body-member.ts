/**
 * Error bodies are a few hundred bytes; a larger one is not parsed (its status rules), so that
 * no answer costs more than this to judge.
 */
const ERROR_BODY_PARSE_LIMIT = 64 * 1024;

/** A JSON error body's top-level object, or undefined for any other body. */
export function errorBodyOf(body: Buffer): Record<string, unknown> | undefined {
  const parsed = parsedErrorBody(body);
  return isObject(parsed) ? parsed : undefined;
}

/** A JSON error body as parsed (any JSON value), or undefined for one too large or not JSON. */
export function parsedErrorBody(body: Buffer): unknown {
  if (body.length > ERROR_BODY_PARSE_LIMIT) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The `error` object of a JSON error body (`{"error":{…}}`, the shape of Google's and OpenAI's), or undefined for any other body. */
export function errorMemberOf(body: Buffer): Record<string, unknown> | undefined {
  return errorMemberIn(errorBodyOf(body));
}

/** The `error` object of an error body already parsed. */
export function errorMemberIn(parsed: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const error = parsed?.['error'];
  return isObject(error) ? error : undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
