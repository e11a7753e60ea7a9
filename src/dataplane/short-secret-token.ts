/**
 * A secret shorter than this is masked only where it stands as a whole token. Placeholder keys
 * of local upstreams (`x`, `none`, `ollama`, `sk-1`) occur inside ordinary words
 * (`application/json`, `latest`); a real vendor key is far longer than this.
 */
export const MIN_SUBSTRING_SECRET_LENGTH = 8;

/** An ASCII letter, digit, `_` or `-`: a byte that continues a token, so a short secret next to one is part of a longer word. */
export function isTokenByte(byte: number | undefined): boolean {
  if (byte === undefined) return false;
  return (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x5f || byte === 0x2d;
}

/** Every form as a whole token: neither preceded nor followed by a token byte (isTokenByte). */
export function wholeTokenPattern(forms: readonly string[]): RegExp {
  const alternatives = forms.map((form) => form.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|');
  return new RegExp(`(?<![A-Za-z0-9_-])(?:${alternatives})(?![A-Za-z0-9_-])`, 'g');
}
