import { request as httpRequest } from 'node:http';

export interface CallOptions {
  token?: string;
  /** A value to send as JSON; a string or Buffer is sent as it is (for malformed bodies). */
  body?: unknown;
  /** Extra headers; an array value sends the header once per element. */
  headers?: Record<string, string | string[]>;
  contentType?: string | null;
  /** Bind the client side to this local address (another direct peer). */
  localAddress?: string;
  language?: string;
}

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** A raw HTTP call with full control over headers and body bytes; no keep-alive. */
export function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const url = new URL(path, baseUrl);
  const raw: string[] = [];
  const add = (name: string, value: string) => raw.push(name, value);
  // With raw (array) headers Node adds no Host of its own.
  add('Host', url.host);
  if (options.token !== undefined) add('Authorization', `Bearer ${options.token}`);
  if (options.language !== undefined) add('Accept-Language', options.language);
  let payload: Buffer | undefined;
  if (options.body !== undefined) {
    const b = options.body;
    payload = Buffer.isBuffer(b) ? b : Buffer.from(typeof b === 'string' ? b : JSON.stringify(b));
    if (options.contentType !== null) add('Content-Type', options.contentType ?? 'application/json');
    add('Content-Length', String(payload.length));
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) add(name, v);
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { method, host: url.hostname, port: url.port, path: url.pathname + url.search, headers: raw, agent: false, localAddress: options.localAddress },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}
