import type { IncomingMessage } from 'node:http';

const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The request's target in origin form, set on the request: an absolute-form target
 * (`GET http://host/v1/models`, which RFC 9112 §3.2.2 has a server accept, and a client set to
 * use the gateway as its proxy sends) becomes its path and query, so that both planes route
 * it. Any other target not starting with `/` (`*`, an authority) is left as it came.
 */
export function originForm(req: Pick<IncomingMessage, 'url'>): string {
  const url = req.url ?? '/';
  if (url.startsWith('/')) return url;
  const scheme = ABSOLUTE_FORM.exec(url);
  if (scheme === null) return url;
  const rest = url.slice(scheme[0].length);
  req.url = rest.startsWith('/') ? rest : `/${rest}`;
  return req.url;
}
