import t from 'tap';
import { parseStrictJson, StrictJsonError } from '../../src/http/strict-json.ts';
import { seedAccessKey, startGateway } from './support/gateway.ts';

const problemOf = (text: string) => {
  try {
    parseStrictJson(text);
    return 'parsed';
  } catch (err) {
    return err instanceof StrictJsonError ? err.problem : 'other';
  }
};

t.test('the parser agrees with JSON.parse on valid documents', async (t) => {
  for (const text of ['{}', '[]', '0', '-1.5e+3', '"a\\u00e9\\n\\"b"', '{"a":[1,{"b":null}],"c":true,"d":false}', ' \t\r\n{ "x" : "y" } ', '"\\ud83d\\ude00"']) {
    t.same(parseStrictJson(text), JSON.parse(text), text);
  }
  const proto = parseStrictJson('{"__proto__":{"polluted":1}}') as Record<string, unknown>;
  t.equal(Object.getPrototypeOf(proto), Object.prototype, '__proto__ stays an ordinary key');
  t.same(Object.keys(proto), ['__proto__']);
});

t.test('the parser names every problem', async (t) => {
  t.equal(problemOf('{"a":1,"a":2}'), 'duplicate_field');
  t.equal(problemOf('{"o":{"k":1,"k":1}}'), 'duplicate_field', 'nested duplicates too');
  t.equal(problemOf('[{"k":1,"k":2}]'), 'duplicate_field', 'inside arrays too');
  t.equal(problemOf('{} {}'), 'trailing_value');
  t.equal(problemOf('{}x'), 'trailing_value');
  t.equal(problemOf('{"a":1}\n[]'), 'trailing_value');
  for (const bad of ['{', '{"a"}', '{"a":}', '[1,]', '{"a":1,}', '01', '1.', '+1', "{'a':1}", '"\u0001"', '"\\x"', 'nul', '', 'NaN', '{"a" 1}']) {
    t.equal(problemOf(bad), 'malformed', JSON.stringify(bad));
  }
  t.equal(problemOf('['.repeat(1000) + ']'.repeat(1000)), 'too_deep');
  const err = (() => {
    try {
      parseStrictJson('{"outer":{"inner":1,"inner":2}}');
    } catch (e) {
      return e as StrictJsonError;
    }
  })();
  t.equal(err?.field, 'outer.inner', 'the duplicated field is named with its path');
});

t.test('every body rejection on a real route', async (t) => {
  const gw = await startGateway(t);
  const post = (body: string, contentType?: string | null) => gw.create('/api/groups', body, contentType === undefined ? {} : { contentType });
  const expectReject = async (res: Awaited<ReturnType<typeof post>>, status: number, code: string, data: Record<string, unknown>, label: string) => {
    t.equal(res.status, status, `${label}: status`);
    t.equal(res.json?.code, code, `${label}: code`);
    t.match(res.json?.data, data, `${label}: data`);
  };
  await expectReject(await post('{"name":"a","name":"b","channel":"ch02"}'), 400, 'INVALID_JSON', { reason: 'duplicate_field', field: 'name' }, 'duplicate field');
  await expectReject(await post('{"name":"a","channel":"ch02","models":[{"external":"m","external":"n"}]}'), 400, 'INVALID_JSON', { reason: 'duplicate_field', field: 'models[0].external' }, 'nested duplicate');
  await expectReject(await post('{"name":"a","channel":"ch02"}{"name":"b"}'), 400, 'INVALID_JSON', { reason: 'trailing_value' }, 'trailing value');
  await expectReject(await post('{"name":"a","channel":"ch02"} 1'), 400, 'INVALID_JSON', { reason: 'trailing_value' }, 'trailing number');
  await expectReject(await post('[{"name":"a","channel":"ch02"}]'), 400, 'INVALID_JSON', { reason: 'not_an_object' }, 'array');
  await expectReject(await post('"text"'), 400, 'INVALID_JSON', { reason: 'not_an_object' }, 'string');
  await expectReject(await post('null'), 400, 'INVALID_JSON', { reason: 'not_an_object' }, 'null');
  await expectReject(await post('{"name":'), 400, 'INVALID_JSON', { reason: 'malformed' }, 'malformed');
  await expectReject(await post('{"name":"a","channel":"ch02"}', 'text/plain'), 400, 'INVALID_JSON', { reason: 'content_type' }, 'text/plain');
  await expectReject(await post('{"name":"a","channel":"ch02"}', null), 400, 'INVALID_JSON', { reason: 'content_type' }, 'no content type');
  await expectReject(await post('{"name":"a","channel":"ch02"}', 'application/json; charset=latin1'), 400, 'INVALID_JSON', { reason: 'content_type' }, 'wrong charset');
  await expectReject(await gw.create('/api/groups', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])), 400, 'INVALID_JSON', { reason: 'malformed' }, 'invalid UTF-8');
  await expectReject(await post('{"name":"a","channel":"ch02","colour":"red"}'), 400, 'VALIDATION_FAILED', { field: 'colour', reason: 'unknown_field' }, 'unknown field');
  await expectReject(await post('{"name":"a","channel":"ch02","models":[{"external":"m","x":1}]}'), 400, 'VALIDATION_FAILED', { field: 'models[0].x', reason: 'unknown_field' }, 'nested unknown field');
  await expectReject(await post('{"name":"a"}'), 400, 'VALIDATION_FAILED', { field: 'channel', reason: 'required' }, 'missing field');
  await expectReject(await post('{"name":5,"channel":"ch02"}'), 400, 'VALIDATION_FAILED', { field: 'name', reason: 'wrong_type' }, 'wrong type');
  await expectReject(await post('{"name":"a","channel":"ch99"}'), 400, 'VALIDATION_FAILED', { field: 'channel', reason: 'invalid_value' }, 'unknown channel');
  await expectReject(await post('{"name":"a","channel":"ch02","weight":0}'), 400, 'VALIDATION_FAILED', { field: 'weight', reason: 'invalid_value' }, 'out of range');
  t.same((await gw.api('GET', '/api/groups')).json.data, [], 'nothing was created by any rejected body');
  const accepted = await post('{"channel":"ch02","name":"a"}', 'application/json; charset=utf-8');
  t.equal(accepted.status, 201, 'a correct body with charset=utf-8 passes');
});

t.test('an oversized body gets 413 REQUEST_TOO_LARGE', async (t) => {
  const gw = await startGateway(t);
  const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10), channel: 'ch02' });
  const res = await gw.create('/api/groups', big);
  t.equal(res.status, 413);
  t.equal(res.json.code, 'REQUEST_TOO_LARGE');
  t.equal(res.json.data.limit_bytes, 1024 * 1024);
});

t.test('the empty-object contract accepts only no body or {}', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  const reveal = (o: Parameters<typeof gw.api>[2] = {}) => gw.api('POST', `/api/access-keys/${key.id}/reveal`, o);
  t.equal((await reveal()).status, 200, 'no body');
  t.equal((await reveal({ body: '{}' })).status, 200, '{}');
  t.equal((await reveal({ body: ' { } ' })).status, 200, '{} with whitespace');
  const extra = await reveal({ body: '{"a":1}' });
  t.equal(extra.status, 400);
  t.same(extra.json.data, { field: 'a', reason: 'unknown_field' });
  const arr = await reveal({ body: '[]' });
  t.equal(arr.json.code, 'INVALID_JSON');
  t.equal(arr.json.data.reason, 'not_an_object');
  const two = await reveal({ body: '{}{}' });
  t.equal(two.json.data.reason, 'trailing_value');
  const getWithBody = await gw.api('GET', '/api/settings', { body: '{"x":1}' });
  t.equal(getWithBody.json.code, 'VALIDATION_FAILED', 'a GET with a non-empty object body is rejected too');
});
