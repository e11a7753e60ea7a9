/** Headers as node and undici hand them over: lower-case names, repeated values as arrays. */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** Headers ready to send: no undefined values. */
export type OutgoingHeaders = Record<string, string | string[]>;

/** A header's first value (a repeated header arrives as an array). */
export function firstHeaderValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
