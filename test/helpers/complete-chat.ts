import { request, type Agent } from 'node:http';

const REQUEST_ID_HEADER = 'x-switchyard-request-id';

export interface ChatAnswer {
  status: number;
  body: string;
  /** The request id the gateway answered with. */
  requestId: string | undefined;
}

/**
 * One chat completion of model `chat` through the gateway at `url`, on `agent`'s connections
 * when given; rejects when the connection fails or is cut before the answer ends.
 */
export function completeChat(url: string, key: string, agent?: Agent): Promise<ChatAnswer> {
  const body = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: 'POST', ...(agent ? { agent } : {}), headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, requestId: res.headers[REQUEST_ID_HEADER] as string | undefined }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
