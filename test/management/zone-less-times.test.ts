import t from 'tap';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { call } from './support/http-client.ts';
import { tempDataDir } from './support/gateway.ts';

// docs/management-api.md, from/to: a date-time without a zone is UTC, as a bare date is, not
// the server's local time. The server runs in its own process with TZ=Asia/Shanghai (UTC+8),
// and the expected times are computed with Date.UTC, so the test does not depend on this
// process's zone.

const AUTH = 'zone-less-times-auth-key-0123456789abcdef';

t.test('a zone-less time is read as UTC whatever the server zone', async (t) => {
  const dataDir = tempDataDir(t);
  const serve = spawnServe(['--port', '0', '--host', '127.0.0.1', '--data', dataDir], { AUTH_KEY: AUTH, TZ: 'Asia/Shanghai' });
  t.teardown(async () => {
    serve.kill('SIGTERM');
    await serve.exit;
  });
  const url = await serve.url;
  const get = (query: string) => call(url, 'GET', `/api/logs?${query}`, { token: AUTH });

  t.equal((await get('from=2026-03-01&to=2026-03-01T00:00')).status, 200, 'midnight with no zone is the bare date');
  for (const [from, expected] of [
    ['2026-03-01T00:00:01', Date.UTC(2026, 2, 1, 0, 0, 1)],
    ['2026-03-01T08:30:00.250', Date.UTC(2026, 2, 1, 8, 30, 0, 250)],
    ['2026-03-01T08:00%2B08:00', Date.UTC(2026, 2, 1, 0, 0, 0)],
  ] as const) {
    // A to before the from is refused with the from as read: the way to see it from outside.
    const res = await get(`from=${from}&to=0`);
    t.equal(res.status, 400, from);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'to', reason: 'before_from', from: expected, to: 0 } }, from);
  }
  for (const impossible of ['2026-02-30T00:00', '2026-03-01T24:00', '2026-03-01T10:60', '2026-03-01T10:00:60']) {
    t.match((await get(`from=${impossible}`)).json, { code: 'VALIDATION_FAILED', data: { field: 'from', reason: 'invalid_value' } }, impossible);
  }
});
