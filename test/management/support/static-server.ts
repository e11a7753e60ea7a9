import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local HTTP server answering each path with a fixed status and body (a price list, a release feed). */
export async function staticServer(t: { teardown(fn: () => unknown): void }, routes: Record<string, { status?: number; body: string }>): Promise<string> {
  const server = createServer((req, res) => {
    const r = routes[req.url ?? ''];
    res.writeHead(r?.status ?? (r ? 200 : 404), { 'content-type': 'application/json' });
    res.end(r?.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
