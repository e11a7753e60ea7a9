import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OutgoingHeaders } from '../upstream/index.ts';
import { ANY_ORIGIN } from './allow-any-origin.ts';
import { drainIfBodyUnread } from './drain-if-body-unread.ts';
import { withRequestId } from './request-id-headers.ts';

/** How long a browser may reuse a preflight's answer (seconds; Chromium caps it at 7200). */
const PREFLIGHT_MAX_AGE = '600';

/** A header name or method (RFC 9110 §5.6.2 token). */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const TOKEN_LIST = new RegExp(`^${TOKEN}(?:[ \\t]*,[ \\t]*${TOKEN})*$`);
const ONE_TOKEN = new RegExp(`^${TOKEN}$`);

/** A CORS preflight, its Origin aside (the caller read it): OPTIONS naming the method it asks for. */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
}

/** The method a preflight asks for, when it is a token (a passthrough path takes any). */
export function requestedMethod(req: IncomingMessage): string | undefined {
  const method = req.headers['access-control-request-method'];
  return typeof method === 'string' && ONE_TOKEN.test(method) ? method : undefined;
}

/**
 * Answers a preflight of a data-plane endpoint: 204, any origin, the path's methods, and the
 * request headers the browser asks for (echoed when they are a list of header names, left out
 * otherwise, which the browser takes as a refusal). No key: a browser sends none with it.
 */
export function answerPreflight(req: IncomingMessage, res: ServerResponse, requestId: string, methods: string): void {
  const headers: OutgoingHeaders = {
    'access-control-allow-origin': ANY_ORIGIN,
    'access-control-allow-methods': methods,
    'access-control-max-age': PREFLIGHT_MAX_AGE,
  };
  const asked = req.headers['access-control-request-headers']?.trim();
  if (asked !== undefined && TOKEN_LIST.test(asked)) headers['access-control-allow-headers'] = asked;
  res.writeHead(204, withRequestId(drainIfBodyUnread(res, headers), requestId));
  res.end();
}
