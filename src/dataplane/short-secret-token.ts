/**
 * A secret shorter than this is masked only where it stands as a whole token. Placeholder keys
 * of local upstreams (`x`, `none`, `ollama`, `sk-1`) occur inside ordinary words
 * (`application/json`, `latest`); a real vendor key is far longer than this.
 */
export const MIN_SUBSTRING_SECRET_LENGTH = 8;

/** An ASCII letter, digit, `_` or `-`: a character that continues a token, so a short secret next to one is part of a longer word. */
const TOKEN_CHARACTER = /[A-Za-z0-9_-]/;

/** TOKEN_CHARACTER as a table of ASCII bytes, for the streamed bytes. */
const TOKEN_BYTES = Uint8Array.from({ length: 0x80 }, (_, byte) => (TOKEN_CHARACTER.test(String.fromCharCode(byte)) ? 1 : 0));

/** A byte that continues a token (TOKEN_CHARACTER). */
export function isTokenByte(byte: number | undefined): boolean {
  return byte !== undefined && TOKEN_BYTES[byte] === 1;
}

/** Every form as a whole token: neither preceded nor followed by a token character (TOKEN_CHARACTER). */
export function wholeTokenPattern(forms: readonly string[]): RegExp {
  const alternatives = forms.map((form) => form.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|');
  return new RegExp(`(?<!${TOKEN_CHARACTER.source})(?:${alternatives})(?!${TOKEN_CHARACTER.source})`, 'g');
}
