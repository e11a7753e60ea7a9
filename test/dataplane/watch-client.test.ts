import t, { type Test } from 'tap';
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { unwatchClient, watchClient } from '../../src/dataplane/watch-client.ts';

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

t.test('the watchers of a connection hear it close; one unwatched does not; one listener serves them all', async (t) => {
  const { server, client } = await socketPair(t);
  const before = server.listenerCount('close');
  const heard: string[] = [];
  const first = () => heard.push('first');
  const second = () => heard.push('second');
  const third = () => heard.push('third');
  watchClient(server, first);
  watchClient(server, second);
  watchClient(server, third);
  unwatchClient(server, second);
  t.equal(server.listenerCount('close'), before + 1, 'one close listener for the connection');
  client.destroy();
  await once(server, 'close');
  t.same(heard, ['first', 'third']);
});

t.test('requests one after another on a kept-alive connection add no listener each', async (t) => {
  const { server } = await socketPair(t);
  const before = server.listenerCount('close');
  for (let i = 0; i < 50; i++) {
    const watcher = () => t.fail('not watching any more');
    watchClient(server, watcher);
    unwatchClient(server, watcher);
  }
  t.equal(server.listenerCount('close'), before + 1);
  server.destroy();
  await once(server, 'close');
  t.pass('closed with nobody watching');
});
