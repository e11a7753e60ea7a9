import t, { type Test } from 'tap';
import { presentedAccessKey, type KeyLocation } from '../../src/dataplane/present-access-key.ts';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson, waitForLog } from './helpers/dataplane-scenarios.ts';

/** A chat completions route on ch02 and an AccessKey allowed it. */
async function chatRoute(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completionJson('m'));
  });
  const seeded = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  const chat = (headers: Record<string, string>) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: chatBody('m') });
  return { upstream, gw, chat, ...seeded };
}

t.test('a key whose stored expires_at names no instant (a row stored before the rule) is refused as expired', async (t) => {
  const { upstream, gw, chat, key, keyValue } = await chatRoute(t);
  t.equal((await chat({ authorization: `Bearer ${keyValue}` })).status, 200, 'the key works before');
  await gw.store.accessKeys.update(key.id, { expires_at: '2099-01-01T00:00:00+01' });
  const res = await chat({ authorization: `Bearer ${keyValue}` });
  t.equal(res.status, 403);
  t.match(await res.json(), { error: { code: 'access_key_expired' } });
  t.match(await waitForLog(gw, res.headers.get('x-request-id')), { status: 403, error_code: 'access_key_expired' });
  t.equal(upstream.requests.length, 1, 'nothing more was forwarded');
});

t.test('an empty key header counts as absent: the next location is used', async (t) => {
  const { upstream, chat, keyValue } = await chatRoute(t);
  const res = await chat({ 'x-api-key': '', 'x-goog-api-key': keyValue });
  t.equal(res.status, 200);
  t.equal(upstream.requests.length, 1);
});

t.test('the presented key is the first location that holds a value', async (t) => {
  const q = (s = '') => new URLSearchParams(s);
  const cases: [string, Record<string, string>, URLSearchParams, string | undefined, KeyLocation | undefined][] = [
    ['Bearer first', { authorization: 'Bearer a', 'x-api-key': 'b', 'x-goog-api-key': 'c' }, q('key=d'), 'a', 'bearer'],
    ['then x-api-key', { 'x-api-key': 'b', 'x-goog-api-key': 'c' }, q('key=d'), 'b', 'x-api-key'],
    ['then x-goog-api-key', { 'x-goog-api-key': 'c' }, q('key=d'), 'c', 'x-goog-api-key'],
    ['then the key query parameter', {}, q('key=d'), 'd', 'query'],
    ['a wrong value is not passed over', { authorization: 'Bearer junk', 'x-api-key': 'b' }, q(), 'junk', 'bearer'],
    ['another scheme is no Bearer', { authorization: 'Basic abc', 'x-api-key': 'b' }, q(), 'b', 'x-api-key'],
    ['blank Bearer', { authorization: 'Bearer   ', 'x-api-key': 'b' }, q(), 'b', 'x-api-key'],
    ['empty x-api-key', { 'x-api-key': '', 'x-goog-api-key': 'c' }, q(), 'c', 'x-goog-api-key'],
    ['blank headers', { 'x-api-key': ' ', 'x-goog-api-key': '\t' }, q('key=d'), 'd', 'query'],
    ['all empty', { authorization: 'Bearer ', 'x-api-key': '' }, q('key='), undefined, undefined],
    ['an empty key parameter before one with a value', {}, q('key=&key=d'), 'd', 'query'],
    ['blank key parameters before one with a value, the first of those', {}, q('key=%20&x=1&key=&key=d&key=e'), 'd', 'query'],
    ['only blank key parameters', { 'x-api-key': '' }, q('key=&key=%09'), undefined, undefined],
  ];
  for (const [name, headers, query, expected, from] of cases) {
    const presented = presentedAccessKey(headers, query);
    t.equal(presented?.value, expected, name);
    t.equal(presented?.from, from, `${name}: where it was found`);
  }
});

t.test('an empty key query parameter before the AccessKey does not hide it', async (t) => {
  const { upstream, gw, keyValue } = await chatRoute(t);
  const res = await fetch(`${gw.url}/v1/chat/completions?key=&key=${keyValue}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody('m') });
  t.equal(res.status, 200);
  t.equal(upstream.requests.length, 1);
  t.notOk(upstream.requests[0]!.url.includes('key'), 'neither key parameter is forwarded');
});
