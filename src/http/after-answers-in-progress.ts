import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Calls `then` once the answers to requests pipelined ahead of this one on `socket` have been
 * written: a socket node handed over (an upgrade, a CONNECT) may still be carrying one, and
 * whatever answers on it next must wait its turn.
 */
export function afterAnswersInProgress(socket: Duplex, then: () => void): void {
  const answering = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (answering) answering.once('finish', () => afterAnswersInProgress(socket, then));
  else then();
}
