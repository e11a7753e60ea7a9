/**
 * A member name as an upstream that matches names without regard to case compares it: Go's
 * encoding/json folds each rune to upper(lower(r)) (so the long s `ſ` is `S`, the Kelvin sign
 * `K` is `K`), and .NET's case-insensitive option compares upper-cased names. JavaScript's full
 * mappings fold a few more (`ß` as `SS`), which only makes the refusals this serves broader.
 */
export function caseFoldedName(name: string): string {
  return name.toLowerCase().toUpperCase();
}
