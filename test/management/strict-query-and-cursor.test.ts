import t from 'tap';
import { openSqliteLogStore, openWorkerLogStore, type LogStore } from '../../src/store/logs/index.ts';
import { logRecord } from './support/log-records.ts';
import { seedAccessKey, startGateway } from './support/gateway.ts';

const HOUR = 3_600_000;

// docs/management-api.md: "an unknown or repeated [query] parameter is VALIDATION_FAILED", on
// every operation; and a `cursor` other than a `next_cursor` as given is 400, field `cursor`.

t.test('GET operations without query parameters refuse any, as the AUTH_KEY and as an AccessKey', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  for (const token of [undefined, key.value]) {
    const who = token === undefined ? 'AUTH_KEY' : 'AccessKey';
    for (const path of ['/api/home', '/api/auth/session', '/api/logs/some-request']) {
      for (const query of ['x=1', 'x=1&x=2', 'x']) {
        const res = await gw.api('GET', `${path}?${query}`, token === undefined ? {} : { token });
        t.equal(res.status, 400, `${who} ${path}?${query}`);
        t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'x', reason: 'unknown_field' } });
      }
    }
    const options = token === undefined ? {} : { token };
    t.equal((await gw.api('GET', '/api/home', options)).status, 200, `${who}: without parameters /api/home answers`);
    t.equal((await gw.api('GET', '/api/auth/session', options)).status, 200, `${who}: without parameters /api/auth/session answers`);
    t.equal((await gw.api('GET', '/api/logs/some-request', options)).status, 404, `${who}: without parameters an unknown log is not found`);
  }
});

const stores: Array<[string, (dir: string) => Promise<LogStore>]> = [
  ['SQLite', async (dir) => openSqliteLogStore(dir)],
  ['worker (SQLite)', (dir) => openWorkerLogStore(dir)],
];

for (const [name, open] of stores) {
  t.test(`logs (${name}): only a next_cursor as given pages on; other spellings and out-of-range numbers are 400`, async (t) => {
    let logs: LogStore | undefined;
    const gw = await startGateway(t, { openLogStore: async (dir) => (logs = await open(dir)) });
    for (let i = 0; i < 5; i++) logs!.append(logRecord({ request_id: `r${i}`, created_at: gw.clock.now - (5 - i) * HOUR }));
    if ('flush' in logs! && typeof logs.flush === 'function') await logs.flush();

    const page1 = await gw.api('GET', '/api/logs?limit=2');
    t.same(page1.json.data.items.map((r: { request_id: string }) => r.request_id), ['r4', 'r3']);
    const issued: string = page1.json.data.next_cursor;
    const page2 = await gw.api('GET', `/api/logs?limit=2&cursor=${encodeURIComponent(issued)}`);
    t.same(page2.json.data.items.map((r: { request_id: string }) => r.request_id), ['r2', 'r1'], 'the cursor as given pages on');

    const text = Buffer.from(issued, 'base64url').toString();
    const [createdAt, seq] = text.split('.');
    const b64url = (s: string) => Buffer.from(s).toString('base64url');
    const refused: Array<[string, string]> = [
      ['a created_at past the safe integers (Infinity)', b64url(`${'9'.repeat(400)}.1`)],
      ['a 30-digit seq', b64url(`${createdAt}.${'1'.repeat(30)}`)],
      ['a created_at one past the safe integers', b64url(`${Number.MAX_SAFE_INTEGER + 1}.${seq}`)],
      ['the issued cursor with padding', `${issued}==`],
      ['a leading zero', b64url(`0${createdAt}.${seq}`)],
      ['a negative seq', b64url(`${createdAt}.-${seq}`)],
    ];
    // Standard base64 differs from base64url only by padding and '+' '/': the same text is then another spelling.
    const standard = Buffer.from(text).toString('base64');
    if (standard !== issued) refused.push(['the issued text in standard base64', standard]);
    // '1.23' has no padding in base64url ('MS4yMw') and two '=' in standard base64.
    refused.push(['a cursor text in standard base64, padded', Buffer.from('1.23').toString('base64')]);
    t.equal((await gw.api('GET', `/api/logs?cursor=${Buffer.from('1.23').toString('base64url')}`)).status, 200, 'the same text in base64url is well formed (it pages after 1 ms past the epoch: nothing)');
    for (const [what, cursor] of refused) {
      t.not(cursor, issued);
      const res = await gw.api('GET', `/api/logs?limit=2&cursor=${encodeURIComponent(cursor)}`);
      t.equal(res.status, 400, `${what}: ${cursor.slice(0, 40)}`);
      t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'cursor', reason: 'invalid_value' } });
    }
    t.match((await gw.api('GET', '/api/health')).json.data, { stores: { logs: 'ok' } }, 'the store is fine');
  });
}
