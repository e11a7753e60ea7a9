import type { IncomingMessage } from 'node:http';
import { BodyRewriteError, SpoolFailure } from './body/index.ts';
import { parserFailureOf } from '../http/parser-failure.ts';
import { DataPlaneError } from './data-plane-error.ts';
import { parserFailureError } from './parser-failure-error.ts';

/**
 * A request body that failed while it streamed, and not by the upstream's fault: the client's
 * (over the size limit, not JSON, a broken form) or the gateway's spool file (a full disk,
 * `spool_unavailable`, no bug). Undefined for anything else (the client's connection went away).
 */
export function requestBodyFailure(error: unknown): DataPlaneError | undefined {
  if (error instanceof DataPlaneError) return error;
  if (error instanceof SpoolFailure) return new DataPlaneError('spool_unavailable');
  if (error instanceof BodyRewriteError) return new DataPlaneError(error.code === 'invalid_json' ? 'invalid_json' : 'invalid_request_body', error.message);
  return undefined;
}

/** The parser's error for a connection its client ended before the message did: a client that left. */
const CLIENT_ENDED_MID_MESSAGE = 'HPE_INVALID_EOF_STATE';

/**
 * A body node's parser refused (chunked framing with a bad chunk size, a chunk longer or
 * shorter than its size, chunk extensions over its limit): the server answers it
 * (src/server/answer-client-errors.ts) and destroys the connection with the parser's error (an
 * `HPE_*` code), so the body's reader sees only a connection that went away. The error is the
 * one that answer names. Undefined when the body was whole or its client ended the connection
 * (or it ended otherwise).
 */
export function brokenBodyFraming(req: IncomingMessage): DataPlaneError | undefined {
  if (req.complete) return undefined;
  const code = (req.socket?.errored as NodeJS.ErrnoException | null | undefined)?.code;
  return code?.startsWith('HPE_') && code !== CLIENT_ENDED_MID_MESSAGE ? parserFailureError(parserFailureOf(code, true)) : undefined;
}
