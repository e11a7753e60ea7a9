import t, { type Test } from 'tap';
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { RequestWatch } from '../../src/dataplane/watch-client.ts';

/** A connected pair of real TCP sockets on 127.0.0.1: the server's side and the client's. */
async function socketPair(t: Test): Promise<{ server: Socket; client: Socket }> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as { port: number };
  const accepted = once(listener, 'connection');
  const client = connect(port, '127.0.0.1');
  const [server] = (await accepted) as [Socket];
  t.teardown(() => {
    client.destroy();
    server.destroy();
    listener.close();
  });
  return { server, client };
}

/** A request's watch on `socket`, pointed at a handler that records `name`. */
function watching(socket: Socket, heard: string[], name: string): RequestWatch {
  const watch = new RequestWatch(socket);
  watch.point(() => heard.push(name));
  return watch;
}

t.test('the requests of a connection hear it close; one stopped does not; one listener serves them all', async (t) => {
  const { server, client } = await socketPair(t);
  const before = server.listenerCount('close');
  const heard: string[] = [];
  watching(server, heard, 'first');
  const second = watching(server, heard, 'second');
  watching(server, heard, 'third');
  watching(server, heard, 'pointed away').point(undefined);
  second.stop();
  t.equal(server.listenerCount('close'), before + 1, 'one close listener for the connection');
  client.destroy();
  await once(server, 'close');
  t.same(heard, ['first', 'third']);
});

t.test('a request that starts while an earlier one on the connection is still watched is heard too', async (t) => {
  const { server, client } = await socketPair(t);
  const heard: string[] = [];
  const first = watching(server, heard, 'first');
  watching(server, heard, 'overlapping');
  first.stop();
  watching(server, heard, 'next');
  client.destroy();
  await once(server, 'close');
  t.same(heard.sort(), ['next', 'overlapping']);
});

t.test('requests one after another on a kept-alive connection add no listener each', async (t) => {
  const { server } = await socketPair(t);
  const before = server.listenerCount('close');
  for (let i = 0; i < 50; i++) {
    const watch = new RequestWatch(server);
    watch.point(() => t.fail('not watching any more'));
    watch.stop();
  }
  t.equal(server.listenerCount('close'), before + 1);
  server.destroy();
  await once(server, 'close');
  t.pass('closed with nobody watching');
});

t.test('a client that left while nothing was pointed at is told to the next handler, once, after the caller goes on', async (t) => {
  const { server, client } = await socketPair(t);
  const heard: string[] = [];
  const watch = new RequestWatch(server);
  watch.point(undefined);
  client.destroy();
  await once(server, 'close');
  t.same(heard, [], 'nobody was pointed at');
  watch.point(() => heard.push('late'));
  t.same(heard, [], 'not within the caller\'s own turn');
  await Promise.resolve();
  t.same(heard, ['late'], 'told at once after it');
  watch.point(undefined);
  await Promise.resolve();
  t.same(heard, ['late'], 'pointing away calls nothing');
});
