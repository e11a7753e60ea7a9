import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../src/server/create-server.ts';
import { startUpstream } from './helpers/data-plane-harness.ts';

const AUTH_KEY = 'spool-dir-auth-key-0123456789abcdef';

t.test('large bodies spool under <data>/spool, which a start empties of what an earlier run left', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-spool-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const spool = path.join(dataDir, 'spool');
  mkdirSync(spool);
  writeFileSync(path.join(spool, 'switchyard-body-left-by-a-crash.json'), '{"model":"m"');

  let spooledDuringRequest: string[] = [];
  const upstream = await startUpstream((_req, res) => {
    spooledDuringRequest = readdirSync(spool);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  t.teardown(() => upstream.close());
  const server = await createServer({ dataDir, port: 0, authKey: AUTH_KEY, mountDataPlane: dataPlaneMount({ bufferedJsonBytes: 1024 }), log: () => {} });
  t.teardown(() => server.close());
  t.same(readdirSync(spool), [], 'the leftover file is gone');
  t.equal(statSync(spool).mode & 0o777, 0o700, 'only the owner can read what is spooled');

  const api = (p: string, body: unknown) => fetch(`${server.url}${p}`, { method: 'POST', headers: { authorization: `Bearer ${AUTH_KEY}`, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<{ data: Record<string, any> }>);
  const group = (await api('/api/groups', { name: 'g', channel: 'ch02', base_url: upstream.url, models: [{ external: 'chat' }] })).data;
  await api(`/api/groups/${group.id}/credentials/import`, { credentials: 'sk-upstream-spool-0001' });
  const key = (await api('/api/access-keys', { name: 'k', protocols: ['x-completions'] })).data;
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(4096) }], model: 'chat' }) });
  t.equal(res.status, 200);
  await res.text();
  t.equal(spooledDuringRequest.length, 1, 'the body was spooled there while it was forwarded');
  t.ok(existsSync(spool));
});
