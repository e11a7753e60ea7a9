import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { readJsonObjectBody } from '../../src/http/json-body.ts';

// The server sets no whole-request deadline, so the management plane's body reader bounds a
// silent body itself: its connection ends, as if the client had left.
t.test('a management body that goes silent ends its connection; one that keeps coming is read', async (t) => {
  const outcomes: string[] = [];
  const server = createServer((req, res) => {
    readJsonObjectBody(req, 1024 * 1024, 300).then(
      (body) => {
        outcomes.push(`read ${JSON.stringify(body)}`);
        res.writeHead(200).end();
      },
      () => outcomes.push('ended'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const send = (pieces: string[], gapMs: number, length: number) =>
    new Promise<string>((resolve) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(length) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(`answered ${res.statusCode}`));
      });
      req.on('error', () => resolve('connection ended'));
      let i = 0;
      const next = () => {
        req.write(pieces[i++]!, () => {
          if (i < pieces.length) setTimeout(next, gapMs);
        });
      };
      next();
    });
  const whole = '{"name":"a","note":"bcdefghij"}';
  // Half of it, then nothing: longer than the 300 ms bound.
  t.equal(await send([whole.slice(0, 10)], 0, whole.length), 'connection ended');
  // Piece by piece, each within the bound, for longer than the bound in all.
  t.equal(await send(whole.match(/.{1,4}/g)!, 100, whole.length), 'answered 200');
  t.same(outcomes, ['ended', `read ${whole}`]);
});
