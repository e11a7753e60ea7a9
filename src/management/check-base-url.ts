import { validationFailed } from '../http/api-error.ts';

const BASE_URL_SHAPE = 'a base URL is scheme (http or https), host, optional port and optional path prefix';

/** Spelled out as `http://` or `https://` then the host: WHATWG parsing also takes `http:h`, `http:/u:p@h`, `http:\\h` or `http:///h`. */
const SCHEME = /^https?:\/\/(?!\/)/i;

/** Userinfo sits between `//` and the first `/`, `?` or `#`; even an empty one (`http://@h`) is refused. */
const USERINFO = /^https?:\/\/[^/?#]*@/i;

/** Only RFC 3986 characters, so no whitespace or backslash; every `%` starts an escape. */
const URI_TEXT = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;

/** The longest name DNS can hold, written out with its dots. */
const MAX_HOST_NAME = 253;

/**
 * Why `value` is no base URL, or undefined when it is one. The data plane appends request
 * paths to a base URL, so a query string, fragment or userinfo would be dropped on one route
 * and end up in the middle of the path on another: refused here instead, even when empty.
 * The raw text is checked as well as the parsed URL, since the parser repairs what the text
 * gets wrong and the text is what is stored and shown.
 */
function baseUrlProblem(value: string): string | undefined {
  if (!SCHEME.test(value)) return 'does not start with http:// or https:// and the host';
  if (!URI_TEXT.test(value)) return 'has whitespace, a backslash or another character a URL cannot hold';
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return 'not a URL';
  }
  if (USERINFO.test(value) || u.username !== '' || u.password !== '') return 'has userinfo';
  if (value.includes('?')) return 'has a query string';
  if (value.includes('#')) return 'has a fragment';
  // No resolver takes a longer name (RFC 1035 §2.3.4), and a SOCKS5 proxy could not even be asked for it.
  if (u.hostname.length > MAX_HOST_NAME) return `has a host name over ${MAX_HOST_NAME} characters`;
  return undefined;
}

/** Every base URL the management API accepts (a Group's base_url, a credential's location field) passes here, and only here. */
export function checkBaseUrl(value: string, field: string): void {
  const problem = baseUrlProblem(value);
  if (problem) throw validationFailed(field, 'invalid_value', { expected: 'http or https URL', detail: `${problem}: ${BASE_URL_SHAPE}` });
}
