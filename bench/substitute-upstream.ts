import { createServer } from 'node:http';
import { announceListening } from './bench-child.ts';
import { completionBody, doneEvent, streamEvents, usageEvent } from './completions-fixtures.ts';

/**
 * Substitute completions upstream: JSON with usage, or SSE with a few chunks, a usage chunk
 * when `stream_options.include_usage` is set, and [DONE]. Answers immediately.
 */
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: { stream?: unknown; stream_options?: { include_usage?: unknown } } = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json","type":"invalid_request_error"}}');
      return;
    }
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'up-bench' });
      for (const event of streamEvents) res.write(event);
      if (body.stream_options?.include_usage === true) res.write(usageEvent);
      res.end(doneEvent);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': completionBody.length, 'x-request-id': 'up-bench' });
    res.end(completionBody);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => announceListening(server));
