/** Characters no URL or JSON encoder changes (RFC 3986's unreserved): a key of only these has one form. */
const UNCHANGED = /^[A-Za-z0-9._~-]*$/;

/**
 * The forms a secret is echoed in, without repeats: as it is, percent-encoded
 * (`encodeURIComponent`; Python's `quote`, which also encodes `!'()*` and leaves `/`; each in
 * upper- and lower-case hex), JSON-escaped with `/` as `\/`, and JSON-escaped as `\uXXXX`
 * (lower- and upper-case hex) in each ASCII character outside UNCHANGED, or in one such
 * character alone (an encoder escapes its own set: Go's `<>&`, .NET's `+`), in this order. One
 * may begin another: `%` is percent-encoded as `%25`.
 */
export function echoedForms(secret: string): string[] {
  if (UNCHANGED.test(secret)) return [secret];
  const component = encodeURIComponent(secret);
  const quoted = component.replace(/[!'()*]/g, (c) => `%${hex(c).toUpperCase()}`).replaceAll('%2F', '/');
  const escapable = [...new Set(secret)].filter((c) => c < '\x80' && !UNCHANGED.test(c));
  const escapeSets = escapable.length > 1 ? [escapable, ...escapable.map((c) => [c])] : [escapable];
  const escaped = escapeSets.flatMap((set) => [unicodeEscaped(secret, set, false), unicodeEscaped(secret, set, true)]);
  return [...new Set([secret, component, secret.replaceAll('/', '\\/'), quoted, lowerHex(component), lowerHex(quoted), ...escaped])];
}

function hex(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(2, '0');
}

function lowerHex(encoded: string): string {
  return encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
}

function unicodeEscaped(secret: string, chars: readonly string[], upper: boolean): string {
  let out = '';
  for (const c of secret) {
    const code = hex(c).padStart(4, '0');
    out += chars.includes(c) ? `\\u${upper ? code.toUpperCase() : code}` : c;
  }
  return out;
}
