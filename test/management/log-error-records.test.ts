import t, { type Test } from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { openSqliteLogStore } from '../../src/store/logs/index.ts';
import { startGateway } from './support/gateway.ts';

// docs/management-api.md, what counts as an error: a stream whose answer began (200) and then
// failed (the gateway's error event after a break, or the upstream's own error event) is an
// error to /api/usage, /api/home/statistics and `status_class=error` alike, and
// `error_code` lists such records; by_status_class stays by HTTP status.

const CHUNK = { id: 'c', object: 'chat.completion.chunk', model: 'vendor-chat', choices: [{ index: 0, delta: { content: 'hi' } }] };

async function upstream(t: Test): Promise<string> {
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const mode = (JSON.parse(body) as { mode: string }).mode;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // Cut once the first event has gone out: the answer has begun.
    if (mode === 'break') return void res.write(`data: ${JSON.stringify(CHUNK)}\n\n`, () => res.socket?.destroy());
    res.write(`data: ${JSON.stringify(CHUNK)}\n\n`);
    if (mode === 'error_event') res.end(`data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error', code: 'overloaded' } })}\n\n`);
    else res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('a stream that fails after its answer began counts as an error everywhere', async (t) => {
  const gw = await startGateway(t, { openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount() });
  const group = await gw.create('/api/groups', { name: 'g', channel: 'ch02', base_url: await upstream(t), models: [{ external: 'chat', upstream: 'vendor-chat' }] });
  t.equal(group.status, 201, group.text);
  t.equal((await gw.create(`/api/groups/${group.json.data.id}/credentials/import`, { credentials: 'sk-upstream-0123456789' })).status < 300, true);
  const key = await gw.create('/api/access-keys', { name: 'client', protocols: ['x-completions'] });
  for (const mode of ['break', 'error_event', 'ok']) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.json.data.value}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', stream: true, mode, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    t.equal(res.status, 200, `${mode}: ${text}`);
  }
  gw.clock.advance(60_000);

  const all = (await gw.api('GET', '/api/logs')).json.data.items as Array<{ status: number; error_code: string | null }>;
  t.same(all.map((r) => [r.status, r.error_code]).sort(), [[200, null], [200, 'upstream_stream_broken'], [200, 'upstream_stream_error']]);
  const errors = (await gw.api('GET', '/api/logs?status_class=error')).json.data.items as Array<{ error_code: string }>;
  t.same(errors.map((r) => r.error_code).sort(), ['upstream_stream_broken', 'upstream_stream_error'], 'status_class=error');
  const broken = (await gw.api('GET', '/api/logs?error_code=upstream_stream_broken')).json.data.items as Array<{ error_code: string }>;
  t.same(broken.map((r) => r.error_code), ['upstream_stream_broken'], 'error_code filter');

  t.match((await gw.api('GET', '/api/usage')).json.data.totals, { requests: 3, errors: 2 }, '/api/usage totals');
  const stats = (await gw.api('GET', '/api/home/statistics')).json.data.totals;
  t.match(stats, { requests: 3, errors: 2, by_status_class: { '2xx': 3, '4xx': 0, '5xx': 0 } }, '/api/home/statistics totals');
  t.equal(stats.error_rate, 2 / 3);
});

t.test('error_code is validated like the other filters', async (t) => {
  const gw = await startGateway(t);
  for (const bad of ['Upstream', 'a%20b', 'x'.repeat(65), 'upstream-429']) {
    const res = await gw.api('GET', `/api/logs?error_code=${bad}`);
    t.equal(res.status, 400, bad);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'error_code', reason: 'invalid_value' } }, bad);
  }
  t.equal((await gw.api('GET', '/api/logs?error_code=upstream_429')).status, 200);
  t.match((await gw.api('GET', '/api/logs?error_code=a&error_code=b')).json, { data: { field: 'error_code', reason: 'repeated' } });
});
