/** The four whitespace bytes JSON allows between tokens (RFC 8259). */
export function isJsonWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
