import t from 'tap';
import { WebSocket } from 'ws';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedRoute, startUpstream, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { chatBody, waitForLog } from '../dataplane/helpers/dataplane-scenarios.ts';
import { realtimeRoute, startWsUpstream, upgradeStatus } from '../dataplane/helpers/ws-upstream.ts';
import { seedAccessKey, seedGroup, startGateway } from './support/gateway.ts';

/** Characters node's http client refuses in a header value (validateHeaderValue): beyond Latin-1, line breaks, other controls. */
const UNSENDABLE: Array<[string, string]> = [
  ['a pasted ellipsis', 'sk-secret-AAAA…0001'],
  ['a line feed', 'sk-secret-AAAA\n0001'],
  ['a lone carriage return', 'sk-secret-AAAA\r0001'],
  ['a NUL', 'sk-secret-AAAA\u00000001'],
  ['a DEL', 'sk-secret-AAAA\u007f0001'],
];

t.test('credentials: a secret a request header cannot carry is refused at import, connect and PATCH', async (t) => {
  const gw = await startGateway(t);
  const groupId = await seedGroup(gw);
  const base = `/api/groups/${groupId}/credentials`;
  const good = (await gw.create(`${base}/import`, { credentials: 'sk-secret-GOOD0001' })).json.data.created[0].id as number;
  for (const [what, secret] of UNSENDABLE) {
    // The import splits lines at a line feed, so that one is the connect and PATCH cases' only.
    if (!secret.includes('\n')) {
      const imported = await gw.create(`${base}/import`, { credentials: `sk-secret-OKAY0002\n${secret}` });
      t.equal(imported.status, 400, `import, ${what}`);
      t.match(imported.json, { code: 'VALIDATION_FAILED', data: { field: 'fields.api_key', reason: 'not_a_header_value', line: 2 } }, `import, ${what}: names the field, why and which line`);
    }
    const connected = await gw.create(`${base}/connect`, { kind: 'api_key', fields: { api_key: secret } });
    t.equal(connected.status, 400, `connect, ${what}`);
    t.match(connected.json, { code: 'VALIDATION_FAILED', data: { field: 'fields.api_key', reason: 'not_a_header_value' } }, `connect, ${what}`);
    const patched = await gw.api('PATCH', `${base}/${good}`, { body: { fields: { api_key: secret } } });
    t.equal(patched.status, 400, `PATCH, ${what}`);
    t.match(patched.json, { code: 'VALIDATION_FAILED', data: { field: 'fields.api_key', reason: 'not_a_header_value' } }, `PATCH, ${what}`);
    t.notMatch(`${connected.text}${patched.text}`, /sk-secret-AAAA/, `${what}: no secret in the answers`);
  }
  t.same((await gw.api('GET', base)).json.data.map((c: { id: number }) => c.id), [good], 'nothing but the first credential was stored');
  t.same((await gw.api('POST', `${base}/${good}/reveal`)).json.data.fields, { api_key: 'sk-secret-GOOD0001' }, 'its secret unchanged');
  // Latin-1 beyond ASCII and a tab are header-safe under node's rule: still accepted.
  t.equal((await gw.create(`${base}/connect`, { kind: 'api_key', fields: { api_key: 'sk-secret-é\tBBBB0003' } })).status, 201, 'Latin-1 and a tab pass');
});

t.test('credentials: a multi-field JSON import line names the credential line and field', async (t) => {
  const gw = await startGateway(t);
  const res = await gw.create('/api/groups', { name: 'g', channel: 'ch31', base_url: 'https://group.test', models: [{ external: 'm' }] });
  const groupId = res.json.data.id as number;
  const line = JSON.stringify({ access_key: 'ak-secret-AAAA\n0001', base_url: 'https://up.example' });
  const imported = await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: line });
  t.equal(imported.status, 400);
  t.match(imported.json, { code: 'VALIDATION_FAILED', data: { field: 'credentials.access_key', reason: 'not_a_header_value', line: 1 } });
});

t.test('a stored secret a header cannot carry fails as the gateway\'s problem: no cooldown, nothing sent, the next credential serves', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"c1","object":"chat.completion","choices":[]}');
  });
  // Written straight into the store, as a secret stored before the management API refused it.
  const { group, keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: ['sk-stored…0001'] });
  const [bad] = await gw.store.credentials.list(group.id);
  const chat = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }) });

  const refused = await chat();
  t.equal(refused.status, 502);
  t.match(await refused.json(), { error: { code: 'credential_unusable' } }, 'a code that names the gateway-side cause, not upstream_unreachable');
  t.same(upstream.requests, [], 'nothing reached the upstream');
  t.match(await gw.store.credentials.get(group.id, bad!.id), { state: 'active', cooldown_until: null }, 'the credential is not cooled down');
  t.match(await waitForLog(gw, refused.headers.get('x-switchyard-request-id')), { status: 502, error_code: 'credential_unusable' }, 'recorded with that code');

  // A good credential in the same Group answers in its place, every time.
  await gw.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-good-0002' }, secretFields: ['api_key'] }]);
  for (let i = 0; i < 2; i++) t.equal((await chat()).status, 200, `request ${i + 1} is served by the other credential`);
  t.same(upstream.requests.map((r) => r.headers.authorization), ['Bearer sk-good-0002', 'Bearer sk-good-0002']);
  t.match(await gw.store.credentials.get(group.id, bad!.id), { state: 'active', cooldown_until: null }, 'still not cooled down');
});

t.test('on a WebSocket route too, such a stored secret is answered as the gateway\'s problem, and the next credential opens the session', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const { gw, group, wsUrl } = await realtimeRoute(t, upstream.url, { upstreamKeys: ['sk-stored…0001'] });
  const [bad] = await gw.store.credentials.list(group.id);
  const refused = await upgradeRefusal(wsUrl);
  t.equal(refused.status, 502);
  t.match(JSON.parse(refused.body), { error: { code: 'credential_unusable' } });
  t.same(upstream.seen, [], 'nothing reached the upstream');
  await gw.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-good-0002' }, secretFields: ['api_key'] }]);
  for (let i = 0; i < 2; i++) t.equal(await upgradeStatus(wsUrl), 101, `session ${i + 1} opens`);
  t.same(upstream.seen.map((r) => r.headers.authorization), ['Bearer sk-good-0002', 'Bearer sk-good-0002'], 'only the good secret reached the upstream');
  t.match(await gw.store.credentials.get(group.id, bad!.id), { state: 'active', cooldown_until: null }, 'the unsendable one is not cooled down');
});

/** The HTTP answer to an upgrade the gateway refuses. */
function upgradeRefusal(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => reject(new Error('the session opened')));
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
  });
}

t.test('a static secret given with spaces or tabs around it is stored without them, so an upstream echoing the key it read is masked', async (t) => {
  const KEY = 'sk-trail-0123456789abcdefABCDEFxyz';
  const upstream = await startUpstream((req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${String(req.headers.authorization).replace(/^Bearer /, '')}` } }));
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, ['chat'], { base_url: upstream.url });
  const base = `/api/groups/${groupId}/credentials`;
  const connected = await gw.create(`${base}/connect`, { kind: 'api_key', fields: { api_key: ` \t${KEY} \t` } });
  t.equal(connected.status, 201);
  const id = connected.json.data.id as number;
  t.same((await gw.api('POST', `${base}/${id}/reveal`)).json.data.fields, { api_key: KEY }, 'connect: stored without the blanks');
  const imported = await gw.create(`${base}/import`, { credentials: `${KEY}-imported\t` });
  t.same((await gw.api('POST', `${base}/${imported.json.data.created[0].id}/reveal`)).json.data.fields, { api_key: `${KEY}-imported` }, 'import: the same');
  const blank = await gw.create(`${base}/connect`, { kind: 'api_key', fields: { api_key: ' \t ' } });
  t.match(blank.json, { code: 'VALIDATION_FAILED', data: { field: 'fields.api_key', reason: 'required' } }, 'blanks alone are no secret');
  await gw.api('DELETE', `${base}/${imported.json.data.created[0].id}`);
  t.equal((await gw.api('PATCH', `${base}/${id}`, { body: { fields: { api_key: `${KEY} ` } } })).status, 200);
  t.same((await gw.api('POST', `${base}/${id}/reveal`)).json.data.fields, { api_key: KEY }, 'PATCH: the same');
  const key = await seedAccessKey(gw);
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.value}`, 'content-type': 'application/json' }, body: chatBody('chat') });
  const body = await res.text();
  t.equal(upstream.requests.at(-1)?.headers.authorization, `Bearer ${KEY}`, 'the upstream read the key');
  t.notMatch(body, KEY, 'the echoed key is not shown to the client');
  t.match(body, '***Fxyz', 'it is masked');
});
