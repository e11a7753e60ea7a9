import { gzipSync } from 'node:zlib';
import t from 'tap';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';

// Model discovery asks for its list uncompressed (accept-encoding: identity), as the data
// plane does: an upstream left to choose may gzip it, and the list is parsed as sent.

const AUTH_KEY = 'discovery-encoding-auth-key-0123456789abcdef';

t.test('DISC sends accept-encoding: identity, so an upstream that compresses when allowed answers plain JSON', async (t) => {
  const asked: (string | undefined)[] = [];
  const upstream = await startUpstream((req, res) => {
    const acceptEncoding = req.headers['accept-encoding'];
    asked.push(Array.isArray(acceptEncoding) ? acceptEncoding.join(', ') : acceptEncoding);
    const text = JSON.stringify({ object: 'list', data: [{ id: 'm-a' }, { id: 'm-b' }] });
    // As many servers do: gzip unless the client says identity only.
    if (acceptEncoding === 'identity') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
      return;
    }
    const gz = gzipSync(text);
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(gz.length) });
    res.end(gz);
  });
  t.teardown(() => upstream.close());
  const server = await startDiscoveryServer(t, AUTH_KEY);
  const group = await server.store.groups.create({ name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'a', upstream: 'm-a' }] });
  await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-up-encoding' }, secretFields: ['api_key'] }]);
  const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
  t.equal(res.status, 200);
  t.match(await res.json(), { code: 0, data: { models: [{ id: 'm-a', configured: true }, { id: 'm-b', configured: false }], truncated: false } });
  t.same(asked, ['identity']);
});
