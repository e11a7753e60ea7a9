import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientResponseHeaders, upstreamRequestHeaders, type UpstreamClient } from '../src/upstream/index.ts';

/**
 * The floor's work per request: node:http plus the gateway's upstream client, nothing else.
 * The request body streams to the upstream as it comes, the answer goes back chunk by chunk
 * with backpressure, and a client that leaves calls the upstream request off.
 */
export function floorHandler(client: Pick<UpstreamClient, 'exchange'>, upstreamBase: string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const exchange = client.exchange({
      url: `${upstreamBase}${req.url ?? '/'}`,
      method: req.method ?? 'GET',
      headers: upstreamRequestHeaders(req.headers),
      body: hasBody ? req : null,
    });
    res.on('close', () => {
      if (!res.writableFinished) exchange.abort();
    });
    exchange.reply.then(
      (reply) => {
        res.writeHead(reply.status, clientResponseHeaders(reply.headers));
        reply.consume({
          onData: (chunk) => {
            if (res.write(chunk)) return;
            reply.pause();
            res.once('drain', () => reply.resume());
          },
          onEnd: () => res.end(),
          onError: () => res.destroy(),
        });
      },
      () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"upstream unavailable","type":"server_error"}}');
      },
    );
  };
}
