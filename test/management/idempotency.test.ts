import { randomUUID } from 'node:crypto';
import t from 'tap';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';

const DAY = 86_400_000;
const groupBody = { name: 'g', channel: 'ch02', base_url: 'https://upstream.test', models: [{ external: 'm' }] };

t.test('every operation the specification marks requires an Idempotency-Key (428)', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const key = await seedAccessKey(gw);
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-one-1234567890' });
  const credentialId = imported.json.data.created[0].id;
  const marked: Array<[string, unknown]> = [
    ['/api/groups', groupBody],
    [`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-two-1234567890' }],
    [`/api/groups/${groupId}/credentials/connect`, { kind: 'api_key', fields: { api_key: 'sk-three-123456789' } }],
    [`/api/groups/${groupId}/credentials/${credentialId}/reset-credits/consume`, {}],
    ['/api/access-keys', { name: 'k', protocols: [] }],
    [`/api/access-keys/${key.id}/rotate`, {}],
  ];
  for (const [path, body] of marked) {
    const res = await gw.api('POST', path, { body });
    t.equal(res.status, 428, path);
    t.equal(res.json.code, 'IDEMPOTENCY_KEY_REQUIRED', path);
  }
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 1, 'none of them ran');
});

t.test('a malformed or repeated key is 400 INVALID_IDEMPOTENCY_KEY', async (t) => {
  const gw = await startGateway(t);
  const id = randomUUID();
  // Upper case, not a UUID, empty, braced, version 1, wrong variant, two values in one line.
  const bad = [id.toUpperCase(), 'not-a-uuid', '', `{${id}}`, id.replace(/^(.{14})./, '$11'), id.replace(/^(.{19})./, '$1c'), `${id}, ${randomUUID()}`];
  for (const value of bad) {
    const res = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': value } });
    t.equal(res.status, 400, JSON.stringify(value));
    t.equal(res.json.code, 'INVALID_IDEMPOTENCY_KEY');
    t.same(res.json.data, { reason: 'malformed' });
  }
  const repeated = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': [id, id] } });
  t.equal(repeated.status, 400, 'the same value twice is still two values');
  t.same(repeated.json.data, { reason: 'repeated' });
  t.same((await gw.api('GET', '/api/groups')).json.data, []);
});

t.test('a retry replays the stored result, marked, without running again', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const first = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 201);
  t.notOk(first.headers['idempotency-replayed']);
  const reordered = { models: groupBody.models, base_url: groupBody.base_url, channel: 'ch02', name: 'g' };
  const second = await gw.api('POST', '/api/groups', { body: reordered, headers: { 'Idempotency-Key': key }, language: 'zh-CN' });
  t.equal(second.status, 201);
  t.equal(second.headers['idempotency-replayed'], 'true');
  t.same(second.json.data, first.json.data, 'the same data');
  t.equal(second.json.message, '成功', 'the envelope text follows the retry\'s language');
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 1, 'one Group');
});

t.test('a different request under the same key is 409 IDEMPOTENCY_KEY_REUSED', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  const otherBody = await gw.api('POST', '/api/groups', { body: { ...groupBody, name: 'h' }, headers: { 'Idempotency-Key': key } });
  t.equal(otherBody.status, 409);
  t.equal(otherBody.json.code, 'IDEMPOTENCY_KEY_REUSED');
  const otherRoute = await gw.api('POST', '/api/access-keys', { body: { name: 'k', protocols: [] }, headers: { 'Idempotency-Key': key } });
  t.equal(otherRoute.status, 409, 'another operation under the same key');
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 1);
  t.same((await gw.api('GET', '/api/access-keys')).json.data, []);
});

t.test('concurrent duplicates execute once', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const all = await Promise.all(Array.from({ length: 8 }, () => gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } })));
  t.same(all.map((r) => r.status), Array(8).fill(201));
  t.equal(all.filter((r) => r.headers['idempotency-replayed'] === 'true').length, 7, 'one execution, seven replays');
  t.equal(new Set(all.map((r) => r.json.data.id)).size, 1);
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 1);
});

t.test('results expire after 7 days: 410 IDEMPOTENCY_RESULT_EXPIRED', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  gw.clock.advance(7 * DAY - 1000);
  const late = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  t.equal(late.status, 201, 'still replayed just before 7 days');
  t.equal(late.headers['idempotency-replayed'], 'true');
  gw.clock.advance(1000);
  const expired = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  t.equal(expired.status, 410);
  t.equal(expired.json.code, 'IDEMPOTENCY_RESULT_EXPIRED');
  await gw.create('/api/groups', groupBody);
  gw.clock.advance(2 * 3_600_000);
  await gw.create('/api/groups', groupBody);
  const afterPrune = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  t.equal(afterPrune.status, 410, 'pruning drops the result but keeps the key, so it is not run again');
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 3);
});

t.test('durable: a restart between the attempts still replays', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const first = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  await gw.restart();
  const second = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  t.equal(second.status, 201);
  t.equal(second.headers['idempotency-replayed'], 'true');
  t.same(second.json.data, first.json.data);
  t.equal((await gw.api('GET', '/api/groups')).json.data.length, 1);
});

t.test('a created AccessKey value is in the first response only, never in a replay', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const body = { name: 'client', protocols: ['x-completions'] };
  const first = await gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 201);
  t.match(first.json.data.value, /^sy-/);
  const replay = await gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.equal(replay.headers['idempotency-replayed'], 'true');
  t.equal(replay.json.data.id, first.json.data.id);
  t.notOk('value' in replay.json.data, 'no value in the replay');
  t.notMatch(replay.text, first.json.data.value);
  await gw.restart();
  const afterRestart = await gw.api('POST', '/api/access-keys', { body, headers: { 'Idempotency-Key': key } });
  t.notOk('value' in afterRestart.json.data, 'nor after a restart');

  const rotateKey = randomUUID();
  const rotated = await gw.api('POST', `/api/access-keys/${first.json.data.id}/rotate`, { headers: { 'Idempotency-Key': rotateKey } });
  t.match(rotated.json.data.value, /^sy-/);
  const rotateReplay = await gw.api('POST', `/api/access-keys/${first.json.data.id}/rotate`, { headers: { 'Idempotency-Key': rotateKey } });
  t.equal(rotateReplay.headers['idempotency-replayed'], 'true');
  t.notOk('value' in rotateReplay.json.data, 'a rotation replay has no value either');
  t.equal((await gw.api('GET', '/api/auth/session', { token: rotated.json.data.value })).status, 200, 'and did not rotate again');
});

t.test('a failure of the operation is stored and replayed like a success', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const body = { credentials: 'sk-abc-1234567890' };
  const first = await gw.api('POST', '/api/groups/42/credentials/import', { body, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 404);
  await seedGroup(gw);
  const retry = await gw.api('POST', '/api/groups/42/credentials/import', { body, headers: { 'Idempotency-Key': key } });
  t.equal(retry.status, 404);
  t.equal(retry.json.code, 'NOT_FOUND');
  t.equal(retry.headers['idempotency-replayed'], 'true');
});

t.test('a request rejected before the operation does not consume the key', async (t) => {
  const gw = await startGateway(t);
  const key = randomUUID();
  const invalid = await gw.api('POST', '/api/groups', { body: { name: 'g' }, headers: { 'Idempotency-Key': key } });
  t.equal(invalid.status, 400);
  const fixed = await gw.api('POST', '/api/groups', { body: groupBody, headers: { 'Idempotency-Key': key } });
  t.equal(fixed.status, 201, 'the corrected request runs');
  t.notOk(fixed.headers['idempotency-replayed']);
});
