/** Headers as node and undici hand them over: lower-case names, repeated values as arrays. */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** Headers ready to send: no undefined values. */
export type OutgoingHeaders = Record<string, string | string[]>;
