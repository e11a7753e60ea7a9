import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { upstreamModelDiscovery } from '../../src/adapters/discovery/upstream-model-discovery.ts';
import { createServer } from '../../src/server/create-server.ts';
import { UpstreamClient } from '../../src/upstream/index.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';

const AUTH_KEY = 'discovery-test-auth-key-0123456789abcdef';

const cases = [
  { channel: 'ch02', path: '/v1/models', header: 'authorization', value: 'Bearer sk-up', answer: { object: 'list', data: [{ id: 'm-a' }, { id: 'm-b' }] } },
  { channel: 'ch14', path: '/v1/models', header: 'x-api-key', value: 'sk-up', answer: { data: [{ type: 'model', id: 'm-a' }, { type: 'model', id: 'm-b' }], has_more: false } },
  { channel: 'ch15', path: '/v1beta/models', header: 'x-goog-api-key', value: 'sk-up', answer: { models: [{ name: 'models/m-a' }, { name: 'models/m-b' }] } },
];

for (const c of cases) {
  t.test(`DISC on ${c.channel} lists upstream models through a Group's credential`, async (t) => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(c.answer));
    });
    const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-disc-'));
    const client = new UpstreamClient();
    const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, modelDiscovery: upstreamModelDiscovery(client), log: () => {} });
    t.teardown(async () => {
      await server.close();
      await client.destroy();
      await upstream.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const group = await server.store.groups.create({ name: 'g', channel: c.channel, base_url: upstream.url, models: [{ external: 'a', upstream: 'm-a' }] });
    await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-up' }, secretFields: ['api_key'] }]);
    const res = await fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) });
    const body = (await res.json()) as { code: number; data: { models: { id: string; configured: boolean }[] } };
    t.equal(res.status, 200, JSON.stringify(body));
    t.same(body.data.models, [
      { id: 'm-a', configured: true },
      { id: 'm-b', configured: false },
    ]);
    const seen = upstream.requests[0]!;
    t.equal(seen.url, c.path);
    t.equal(seen.headers[c.header], c.value);
    t.notMatch(JSON.stringify(body), 'sk-up', 'the credential is not in the answer');
  });
}
