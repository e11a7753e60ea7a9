import t from 'tap';
import { seedAccessKey, startGateway } from './support/gateway.ts';

// docs/management-api.md, /api/logs and /api/usage: a `to` earlier than `from`, an empty
// `cursor` and a `group_by` dimension named twice are the caller's mistakes, 400, not reads
// that happen to find nothing.

t.test('a to earlier than from is 400 on every operation taking both, as the AUTH_KEY and as an AccessKey', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  for (const token of [undefined, key.value]) {
    const options = token === undefined ? {} : { token };
    const who = token === undefined ? 'AUTH_KEY' : 'AccessKey';
    for (const path of ['/api/logs', '/api/usage']) {
      for (const range of ['from=10&to=5', 'from=2026-03-02&to=2026-03-01', 'from=2026-03-02T10:00:00Z&to=2026-03-02T11:00:00%2B02:00']) {
        const res = await gw.api('GET', `${path}?${range}`, options);
        t.equal(res.status, 400, `${who} ${path}?${range}`);
        t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'to', reason: 'before_from' } }, `${who} ${path}?${range}`);
      }
      for (const range of ['from=5&to=10', 'from=5&to=5', 'from=10', 'to=5']) {
        t.equal((await gw.api('GET', `${path}?${range}`, options)).status, 200, `${who} ${path}?${range} is a range`);
      }
    }
  }
});

t.test('epoch milliseconds past the last time a Date holds name no time: 400, not a read of nothing', async (t) => {
  const gw = await startGateway(t);
  for (const path of ['/api/logs', '/api/usage']) {
    for (const [name, value] of [['from', '8640000000000001'], ['to', '9007199254740993'], ['from', '99999999999999999999999']] as const) {
      const res = await gw.api('GET', `${path}?${name}=${value}`);
      t.equal(res.status, 400, `${path}?${name}=${value}`);
      t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: name, reason: 'invalid_value' } }, `${path}?${name}=${value}`);
    }
    t.equal((await gw.api('GET', `${path}?from=0&to=8640000000000000`)).status, 200, `${path}: the last time a Date holds is a bound`);
  }
});

t.test('an empty cursor is refused like any other that was not handed out', async (t) => {
  const gw = await startGateway(t);
  for (const query of ['cursor=', 'cursor=abc', 'limit=2&cursor=']) {
    const res = await gw.api('GET', `/api/logs?${query}`);
    t.equal(res.status, 400, query);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'cursor', reason: 'invalid_value' } }, query);
  }
  t.equal((await gw.api('GET', '/api/logs?model=')).status, 200, 'another empty parameter is still read as absent');
});

t.test('a group_by dimension named twice is refused; each once is read', async (t) => {
  const gw = await startGateway(t);
  for (const groupBy of ['key,key', 'model,group,model', 'group,group']) {
    const res = await gw.api('GET', `/api/usage?group_by=${groupBy}`);
    t.equal(res.status, 400, groupBy);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'group_by', reason: 'repeated' } }, groupBy);
  }
  const ok = await gw.api('GET', '/api/usage?group_by=key,group,model');
  t.equal(ok.status, 200);
  t.same(ok.json.data.group_by, ['key', 'group', 'model']);
  t.match((await gw.api('GET', '/api/usage?group_by=key,nope')).json, { data: { field: 'group_by', reason: 'invalid_value' } }, 'an unknown one is still invalid_value');
});
