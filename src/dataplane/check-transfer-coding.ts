import type { IncomingMessage, ServerResponse } from 'node:http';
import { DataPlaneError } from './data-plane-error.ts';
import { NO_RETRY } from './retry-hints.ts';

/**
 * Refuses a request whose Transfer-Encoding lists a coding other than chunked (RFC 9112 §6.1:
 * 501). node's parser takes only the chunked framing off and the header is hop-by-hop, so a
 * `gzip, chunked` body would otherwise be read, and forwarded, as if it were not compressed.
 * The chunked framing itself still delimits the body, so the refusal drains it as any other.
 */
export function checkTransferCoding(req: IncomingMessage): void {
  const listed = req.headers['transfer-encoding'];
  if (listed === undefined) return;
  for (const coding of listed.split(',')) {
    const name = coding.trim().toLowerCase();
    if (name !== 'chunked' && name !== '') throw new DataPlaneError('unsupported_transfer_coding', `Got "${listed}".`, NO_RETRY);
  }
}

/**
 * The refusal of a request whose Transfer-Encoding does not end with chunked, if it is one: its
 * body's length cannot be told, so RFC 9112 §6.3 has it answered 400 and its connection closed.
 * node's parser fails such a request as soon as its handler returns, and answers its own bare
 * 400 unless an answer has been written by then: this is to be asked before the handler first waits.
 */
export function bodyFramingRefusal(req: IncomingMessage, res: ServerResponse): DataPlaneError | undefined {
  const listed = req.headers['transfer-encoding'];
  if (listed === undefined) return undefined;
  const codings = listed.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '');
  if (codings.at(-1) === 'chunked') return undefined;
  // node ends the connection once its parser fails: the answer must not promise to keep it.
  res.shouldKeepAlive = false;
  return new DataPlaneError('invalid_request_body', `Its Transfer-Encoding ("${listed}") does not end with chunked, so its length cannot be read.`, NO_RETRY);
}
