/**
 * What node's HTTP parser refused before any handler could answer, as both planes answer it
 * (server.on('clientError')), each in its own error table, with the status node gives it:
 * a request line or header that is not HTTP/1.1 (`malformed_request`, 400), a body whose
 * framing broke once its handler ran (`broken_body`, 400), headers over node's limit
 * (`headers_too_large`, 431), chunk extensions over it (`chunk_extensions_too_large`, 413), a
 * head that did not arrive within the headers deadline (`headers_timeout`, 408).
 */
export type ParserFailure = 'malformed_request' | 'broken_body' | 'headers_too_large' | 'chunk_extensions_too_large' | 'headers_timeout';

/** The failures node answers with other than 400, by its error's code. */
const BY_CODE: Readonly<Record<string, ParserFailure>> = {
  HPE_HEADER_OVERFLOW: 'headers_too_large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'chunk_extensions_too_large',
  ERR_HTTP_REQUEST_TIMEOUT: 'headers_timeout',
};

/** `code` is the error's; `inBody` whether the request it failed had its head read (its handler runs). */
export function parserFailureOf(code: string | undefined, inBody: boolean): ParserFailure {
  return (code !== undefined ? BY_CODE[code] : undefined) ?? (inBody ? 'broken_body' : 'malformed_request');
}
