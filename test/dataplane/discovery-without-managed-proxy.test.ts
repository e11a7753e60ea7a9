import t from 'tap';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { closedPortUrl, withTimeout } from './helpers/dataplane-scenarios.ts';
import { startDiscoveryServer } from './helpers/discovery-server.ts';

// Note 14: ch16, ch17 and ch18 do not support managed proxy. Management refuses a proxy at
// Group and credential scope for them (managed-proxy-config.test.ts); the global one, which
// every other channel's calls take, must not carry theirs either.

const AUTH_KEY = 'no-managed-proxy-auth-key-0123456789abcdef';

const CASES = [
  { channel: 'ch16', kind: 'api_key', values: { api_key: 'sk-up-ch16-no-proxy' } },
  { channel: 'ch17', kind: 'cloud_api_key', values: { api_key: 'sk-up-ch17-no-proxy', region: 'us-east-1' } },
] as const;

for (const c of CASES) {
  t.test(`${c.channel}: model discovery goes direct while a global proxy is set (note 14)`, async (t) => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'm-a' }] }));
    });
    t.teardown(() => upstream.close());
    const server = await startDiscoveryServer(t, AUTH_KEY);
    const group = await server.store.groups.create({ name: 'g', channel: c.channel, base_url: upstream.url, models: [{ external: 'a', upstream: 'm-a' }] });
    await server.store.credentials.createMany(group.id, [{ kind: c.kind, values: { ...c.values }, secretFields: ['api_key'] }]);
    // A proxy that is down: a call sent through it would fail as discovery_failed.
    await server.store.settings.save({ proxy_url: await closedPortUrl() });
    const res = await withTimeout(
      fetch(`${server.url}/api/models/discover`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ group_id: group.id }) }),
      60_000,
      'the discovery answer',
    );
    const text = await res.text();
    t.equal(res.status, 200, text);
    t.match(JSON.parse(text), { data: { models: [{ id: 'm-a', configured: true }] } });
    t.equal(upstream.requests.length, 1, 'the upstream was called directly');
  });
}
