import { validationFailed } from '../http/api-error.ts';

const BASE_URL_SHAPE = 'a base URL is scheme (http or https), host, optional port and optional path prefix';

/** Userinfo sits between `//` and the first `/`, `?` or `#`; even an empty one (`http://@h`) is refused. */
const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

/**
 * Why `value` is no base URL, or undefined when it is one. The data plane appends request
 * paths to a base URL, so a query string, fragment or userinfo would be dropped on one route
 * and end up in the middle of the path on another: refused here instead, even when empty.
 */
function baseUrlProblem(value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return 'not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'not http or https';
  if (USERINFO.test(value)) return 'has userinfo';
  if (value.includes('?')) return 'has a query string';
  if (value.includes('#')) return 'has a fragment';
  return undefined;
}

/** Every base URL the management API accepts (a Group's base_url, a credential's location field) passes here. */
export function checkBaseUrl(value: string, field: string): void {
  const problem = baseUrlProblem(value);
  if (problem) throw validationFailed(field, 'invalid_value', { expected: 'http or https URL', detail: `${problem}: ${BASE_URL_SHAPE}` });
}
