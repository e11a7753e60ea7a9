import { createServer } from 'node:http';
import { announceListening } from './bench-child.ts';
import { UpstreamClient, clientResponseHeaders, upstreamRequestHeaders } from '../src/upstream/index.ts';

/**
 * The floor: node:http plus the gateway's upstream client, nothing else. Whatever switchyard
 * adds on top of this (auth, routing, logging, usage) is its own cost.
 */
const upstreamBase = process.argv[2];
if (upstreamBase === undefined) throw new Error('usage: floor-proxy.ts <upstream base URL>');

const client = new UpstreamClient();
const server = createServer((req, res) => {
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
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => announceListening(server));
