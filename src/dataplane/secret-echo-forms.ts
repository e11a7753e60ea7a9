import { MIN_SUBSTRING_SECRET_LENGTH } from './short-secret-token.ts';

/** A real encoder an upstream (or a relay in front of it) may echo the key through. */
interface EchoEncoder {
  name: string;
  encode: (secret: string) => string;
}

/**
 * The encoders whose output is masked, each by its own rule: a secret is masked in what each
 * makes of it, not in every combination of escapes. Percent-encoders work on UTF-8 bytes; JSON
 * encoders start from JSON.stringify's escapes (`\"`, `\\`, control characters) and escape
 * their own set as `\uXXXX` (UTF-16 units: a character past U+FFFF as its surrogate pair).
 */
const ENCODERS: readonly EchoEncoder[] = [
  { name: 'as it is', encode: (secret) => secret },
  { name: 'JSON (JSON.stringify, Python ensure_ascii=False, Jackson, Json.NET)', encode: jsonEncoder(() => undefined) },
  { name: "PHP json_encode: `/` as `\\/`, non-ASCII as \\uxxxx", encode: jsonEncoder((c) => (c === '/' ? '\\/' : c > '\x7f' ? unicodeEscape(c, false) : undefined)) },
  { name: 'Python json.dumps (ensure_ascii): DEL and non-ASCII as \\uxxxx', encode: jsonEncoder((c) => (c >= '\x7f' ? unicodeEscape(c, false) : undefined)) },
  { name: 'Jackson ESCAPE_NON_ASCII: non-ASCII as \\uXXXX', encode: jsonEncoder((c) => (c > '\x7f' ? unicodeEscape(c, true) : undefined)) },
  { name: 'Go encoding/json: <>& U+2028 U+2029 as \\u00xx', encode: jsonEncoder((c) => (/^[<>&\u2028\u2029]$/.test(c) ? unicodeEscape(c, false) : undefined)) },
  { name: "Gson (HTML-safe by default): <>&=' U+2028 U+2029 as \\u00xx", encode: jsonEncoder((c) => (/^[<>&='\u2028\u2029]$/.test(c) ? unicodeEscape(c, false) : undefined)) },
  {
    name: '.NET System.Text.Json (JavaScriptEncoder.Default): "&\'+<>` control characters, DEL and non-ASCII as \\uXXXX',
    encode: jsonEncoder((c) => (/^["&'+<>`]$/.test(c) || !/^[\x20-\x7e\b\t\n\f\r]$/.test(c) ? unicodeEscape(c, true) : undefined)),
  },
  { name: 'encodeURIComponent', encode: encodeURIComponent },
  { name: 'encodeURIComponent, lower-case hex', encode: (secret) => lowerHex(encodeURIComponent(secret)) },
  { name: "Python urllib.parse.quote (safe='/')", encode: percentEncoder(/^[A-Za-z0-9_.~/-]$/, '%20') },
  { name: "Python urllib.parse.quote (safe='/'), lower-case hex", encode: (secret) => lowerHex(percentEncoder(/^[A-Za-z0-9_.~/-]$/, '%20')(secret)) },
  { name: "RFC 3986 unreserved only (.NET Uri.EscapeDataString, Python quote(safe=''))", encode: percentEncoder(/^[A-Za-z0-9_.~-]$/, '%20') },
  { name: 'Go url.QueryEscape, Python quote_plus', encode: percentEncoder(/^[A-Za-z0-9_.~-]$/, '+') },
  { name: 'WHATWG form-urlencoded (URLSearchParams), Java URLEncoder', encode: percentEncoder(/^[A-Za-z0-9*._-]$/, '+') },
  { name: 'HTML (Python html.escape)', encode: htmlEncoder({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' }) },
  { name: 'HTML (Go html.EscapeString, html/template)', encode: htmlEncoder({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' }) },
  { name: 'HTML (PHP htmlspecialchars)', encode: htmlEncoder({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#039;' }) },
];

/**
 * Base64 (standard and url-safe) of the secret at each of the three alignments it can have in a
 * longer encoded text (`user:key` in Basic auth), each as only the characters the secret alone
 * decides: an echo matches with or without padding, whatever bytes surround it.
 */
const BASE64_ENCODERS: readonly EchoEncoder[] = [0, 1, 2].flatMap((offset) =>
  (['base64', 'base64url'] as const).map((alphabet) => ({ name: `${alphabet} at byte offset ${offset}`, encode: (secret: string) => base64Fragment(secret, offset, alphabet) })),
);

/**
 * The printable ASCII characters each encoder leaves as they are, found by asking the encoders:
 * each works character by character, so a secret made only of these is its own text form.
 */
const KEPT_BY_EVERY_ENCODER: ReadonlySet<string> = new Set(
  Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).filter((c) => ENCODERS.every((encoder) => encoder.encode(c) === c)),
);

/**
 * The forms a secret is echoed in: what each encoder makes of it, without repeats, shortest
 * first (a form that begins a longer one is then the one masked at a place, in a stream as in
 * a whole text). Base64 only for a secret of MIN_SUBSTRING_SECRET_LENGTH or more: a short
 * secret's base64 is a fragment that ordinary text holds. Built once per secret (cached by
 * the masking), not per answer.
 */
export function echoedForms(secret: string): string[] {
  // Most keys are made only of characters every text encoder keeps: their text forms are the
  // secret itself, and the encoders (about 30 us a secret) are skipped.
  const text = [...secret].every((c) => KEPT_BY_EVERY_ENCODER.has(c)) ? [secret] : ENCODERS.map((encoder) => encoder.encode(secret));
  const base64 = secret.length < MIN_SUBSTRING_SECRET_LENGTH ? [] : BASE64_ENCODERS.map((encoder) => encoder.encode(secret));
  const forms = new Set([...text, ...base64]);
  forms.delete('');
  return [...forms].sort((a, b) => a.length - b.length);
}

/** A JSON string's content: `escape`'s answer for a character (a code point), or else JSON.stringify's. */
function jsonEncoder(escape: (c: string) => string | undefined): (secret: string) => string {
  return (secret) => [...secret].map((c) => escape(c) ?? JSON.stringify(c).slice(1, -1)).join('');
}

function unicodeEscape(c: string, upper: boolean): string {
  return c
    .split('')
    .map((unit) => {
      const code = unit.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${upper ? code.toUpperCase() : code}`;
    })
    .join('');
}

/** Percent-encoding of every UTF-8 byte but the ASCII characters `kept`, upper-case hex; a space as `space`. */
function percentEncoder(kept: RegExp, space: '%20' | '+'): (secret: string) => string {
  return (secret) =>
    [...Buffer.from(secret)]
      .map((byte) => {
        const c = String.fromCharCode(byte);
        if (byte < 0x80 && kept.test(c)) return c;
        if (byte === 0x20) return space;
        return `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
      })
      .join('');
}

function lowerHex(encoded: string): string {
  return encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
}

function htmlEncoder(entities: Record<string, string>): (secret: string) => string {
  return (secret) => secret.replace(/[&<>"']/g, (c) => entities[c]!);
}

/** The base64 characters that only the secret's bits decide, the secret starting `offset` bytes into the encoded data. */
function base64Fragment(secret: string, offset: number, alphabet: 'base64' | 'base64url'): string {
  const bytes = Buffer.from(secret);
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString(alphabet);
  return encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}
