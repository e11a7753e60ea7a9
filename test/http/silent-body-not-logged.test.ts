import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import t from 'tap';
import { errorMiddleware } from '../../src/http/error-middleware.ts';
import { readJsonObjectBody } from '../../src/http/json-body.ts';

// A management body gone silent ends its connection (docs/management-api.md, "Serving"): the
// gateway's own bound on an ordinary client, nothing to log. The bound is shortened here
// (the server's is CLIENT_SILENCE_MS, 60 s), so the management plane's error middleware and
// body reader run as the server runs them.
t.test('a management body gone silent ends its connection and logs nothing', async (t) => {
  const logged: string[] = [];
  const app = new Koa();
  app.silent = true;
  app.use(errorMiddleware((line) => logged.push(line)));
  let reads = 0;
  app.use(async (ctx) => {
    // The control: a real failure on the same app is logged, so an empty log means something.
    if (ctx.path === '/broken') throw new Error('a bug of ours');
    reads++;
    ctx.body = { read: await readJsonObjectBody(ctx.req, 1024, 300) };
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const outcome = await new Promise<string>((resolve) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '100' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(`answered ${res.statusCode}`));
    });
    req.on('error', () => resolve('connection ended'));
    req.write('{"name":');
  });
  t.equal(outcome, 'connection ended');
  t.equal(reads, 1, 'the body was being read');
  t.same(logged, [], 'nothing logged');
  const broken = await fetch(`http://127.0.0.1:${port}/broken`);
  t.equal(broken.status, 500);
  t.equal(logged.length, 1, 'a real failure is logged');
  t.match(logged[0], /a bug of ours/);
});
