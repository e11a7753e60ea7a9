import type { ServerResponse } from 'node:http';
import type { OperationEntry } from '../generated/index.ts';
import { drainIfBodyUnread } from './drain-if-body-unread.ts';
import { renderErrorBody } from './render-error-body.ts';
import { withRequestId } from './request-id-headers.ts';

/** A DataPlaneError, or a stream's failure before its first byte (streamFailureOf). */
export interface GatewayError {
  status: number;
  code: string;
  message: string;
  headers?: Record<string, string>;
}

/**
 * Answers a request with the gateway's own error, in the shape a client of `style` parses,
 * unless an answer has started or the client left; returns whether it answered.
 */
export function sendGatewayError(res: ServerResponse, style: OperationEntry['error_style'], error: GatewayError, requestId: string): boolean {
  if (res.headersSent || res.destroyed) return false;
  const body = renderErrorBody(style, error.status, error.code, error.message, requestId);
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...error.headers };
  res.writeHead(error.status, withRequestId(drainIfBodyUnread(res, headers), requestId, style === 'messages'));
  res.end(body);
  return true;
}
