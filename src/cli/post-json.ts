import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** A server's answer: its status and its body as text. */
export interface TextAnswer {
  status: number;
  text: string;
}

/**
 * POSTs a JSON body with node:http(s) rather than fetch: fetch refuses before connecting the
 * ports the Fetch standard calls bad (6000, 6666-6669, 10080 and others), which `serve --port`
 * takes, and says only "fetch failed" for any failure. Rejects with the system's error (its
 * `code`, ECONNREFUSED say), or with code ANSWER_TIMEOUT when the server is silent for
 * `timeoutMs` (one that accepts the connection and never answers would otherwise hold the CLI
 * for good). One connection, closed after the answer: the CLI then exits.
 */
export function postJson(url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<TextAnswer> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'POST', agent: false, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000} s (--timeout)`), { code: 'ANSWER_TIMEOUT' })));
    req.end(body);
  });
}
