import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ERROR_CODES } from '../../src/http/error-codes.ts';
import { seedGroup, startGateway } from './support/gateway.ts';

t.test('success envelope: code 0, localized message, data kept when present', async (t) => {
  const gw = await startGateway(t);
  const res = await gw.api('GET', '/api/auth/session');
  t.equal(res.status, 200);
  t.same(res.json, { code: 0, message: 'OK', data: { principal: 'auth_key' } });
  t.equal(res.headers['cache-control'], 'no-store');
});

t.test('success data may be a non-object and is omitted when there is none', async (t) => {
  const gw = await startGateway(t);
  const id = await seedGroup(gw, ['a', 'b']);
  const models = await gw.api('GET', `/api/groups/${id}/models`);
  t.ok(Array.isArray(models.json.data), 'an array as data');
  const deleted = await gw.api('DELETE', `/api/groups/${id}`);
  t.equal(deleted.status, 200);
  t.same(Object.keys(deleted.json).sort(), ['code', 'message'], 'no data key at all');
});

t.test('failure envelope: string code, message, data only when present', async (t) => {
  const gw = await startGateway(t);
  const res = await gw.api('GET', '/api/groups/999');
  t.equal(res.status, 404);
  t.equal(res.json.code, 'NOT_FOUND');
  t.equal(typeof res.json.message, 'string');
  t.same(res.json.data, { resource: 'group', id: 999 });
  const unauth = await gw.api('GET', '/api/groups', { token: undefined });
  t.same(Object.keys(unauth.json).sort(), ['code', 'message']);
});

t.test('unknown path is 404 ROUTE_NOT_FOUND, known path with another method 405 with Allow', async (t) => {
  const gw = await startGateway(t);
  const missing = await gw.api('GET', '/api/no-such-thing');
  t.equal(missing.status, 404);
  t.equal(missing.json.code, 'ROUTE_NOT_FOUND');
  const root = await gw.api('GET', '/api');
  t.equal(root.json.code, 'ROUTE_NOT_FOUND');
  const wrong = await gw.api('DELETE', '/api/settings');
  t.equal(wrong.status, 405);
  t.equal(wrong.json.code, 'METHOD_NOT_ALLOWED');
  t.match(wrong.headers.allow, /GET/);
  t.match(wrong.headers.allow, /PUT/);
  const param = await gw.api('PATCH', '/api/groups/1');
  t.equal(param.status, 405, 'a parameterized path counts as known');
});

t.test('messages in English by default and Simplified Chinese by Accept-Language', async (t) => {
  const gw = await startGateway(t);
  const en = await gw.api('GET', '/api/nothing-here');
  t.equal(en.json.message, ERROR_CODES.ROUTE_NOT_FOUND.message.en);
  const zh = await gw.api('GET', '/api/nothing-here', { language: 'zh-CN,zh;q=0.9,en;q=0.8' });
  t.equal(zh.json.message, ERROR_CODES.ROUTE_NOT_FOUND.message['zh-CN']);
  t.equal(zh.json.code, 'ROUTE_NOT_FOUND', 'the code does not change with the language');
  const zhOk = await gw.api('GET', '/api/auth/session', { language: 'zh' });
  t.equal(zhOk.json.message, '成功');
  const prefersEn = await gw.api('GET', '/api/auth/session', { language: 'zh;q=0.3, en;q=0.9' });
  t.equal(prefersEn.json.message, 'OK');
  const unauth = await gw.api('GET', '/api/groups', { token: 'wrong', language: 'zh-CN' });
  t.equal(unauth.json.message, ERROR_CODES.UNAUTHORIZED.message['zh-CN']);
});

t.test('every error code has both languages and a 4xx/5xx status', async (t) => {
  for (const [code, entry] of Object.entries(ERROR_CODES)) {
    t.match(code, /^[A-Z][A-Z_]*[A-Z]$/, `${code} is UPPER_SNAKE`);
    t.ok(entry.status >= 400 && entry.status < 600, `${code} status`);
    t.ok(entry.message.en.length > 0 && entry.message['zh-CN'].length > 0, `${code} messages`);
  }
});

t.test('an unexpected failure is 500 INTERNAL_SERVER_ERROR without stack or detail', async (t) => {
  const logged: string[] = [];
  const gw = await startGateway(t, { log: (line) => logged.push(line) });
  // steno writes through .config.json.tmp; a directory in its place makes every write fail.
  mkdirSync(path.join(gw.dataDir, '.config.json.tmp'));
  const res = await gw.create('/api/groups', { name: 'x', channel: 'ch02' });
  t.equal(res.status, 500);
  t.same(res.json, { code: 'INTERNAL_SERVER_ERROR', message: ERROR_CODES.INTERNAL_SERVER_ERROR.message.en });
  t.notMatch(res.text, /EISDIR|at |\.ts/, 'nothing of the error reaches the client');
  t.ok(logged.some((l) => l.includes('EISDIR')), 'the operator log has it');
  const after = await gw.api('GET', '/api/groups');
  t.same(after.json.data, [], 'the failed write did not change the state');
});
