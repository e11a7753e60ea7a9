import type { IncomingMessage } from 'node:http';
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
