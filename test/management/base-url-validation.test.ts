import t, { type Test } from 'tap';
import { startGateway, type Gateway } from './support/gateway.ts';

// A base URL is scheme, host, optional port and optional path prefix: request paths are
// appended to it, so a query string, fragment or userinfo has nowhere consistent to go.
// It is spelled `http://` or `https://` then the host, with no whitespace or backslash: URL
// parsers accept the other spellings below and some find userinfo in them, which would then
// be stored and shown among the credential's non-secret fields.
const REFUSED = [
  'http://h/prefix?api-version=1',
  'http://h/p#frag',
  'http://user:pw@h/p',
  'http://h/p?',
  'http://h/p#',
  'http://@h/p',
  'HTTP://user:pw@h/p',
  'http:user:pw@h/v1',
  'http:/user:pw@h/v1',
  'http:\\\\user:pw@h/v1',
  'http:h/v1',
  'http:///h/v1',
  ' http://h/v1',
  'http://h/v1 ',
  'http://h/v1\t',
  'http://h/a b',
  'http://h\\v1',
  'ftp://h/v1',
  // A host name one character longer than DNS holds.
  `http://${hostOf(254)}/v1`,
];
const PLAIN = 'http://h/prefix/';
/** The longest host name DNS holds. */
const LONGEST_HOST = `http://${hostOf(253)}/v1`;

/** A host name of `length` characters, its labels at most 63 long so that the URL parser takes it. */
function hostOf(length: number): string {
  const labels = `${'a'.repeat(63)}.`.repeat(3);
  return labels + 'b'.repeat(length - labels.length);
}

function refused(t: Test, res: Awaited<ReturnType<Gateway['api']>>, field: string, url: string): void {
  t.equal(res.status, 400, `${url}: 400`);
  t.equal(res.json.code, 'VALIDATION_FAILED', `${url}: VALIDATION_FAILED`);
  t.match(res.json.data, { field, reason: 'invalid_value', detail: /path prefix/ }, `${url}: names ${field} and what a base URL is`);
}

t.test('Group base_url with a query string, fragment, userinfo or another spelling than http(s)://host is refused on create and update; a plain prefix is accepted', async (t) => {
  const gw = await startGateway(t);
  for (const url of REFUSED) refused(t, await gw.create('/api/groups', { name: 'bad', channel: 'ch32', base_url: url }), 'base_url', url);
  t.same((await gw.api('GET', '/api/groups')).json.data, [], 'no refused Group was stored');

  const created = await gw.create('/api/groups', { name: 'relay', channel: 'ch32', base_url: PLAIN });
  t.equal(created.status, 201);
  t.equal(created.json.data.base_url, PLAIN);
  const id = created.json.data.id as number;
  for (const url of REFUSED) refused(t, await gw.api('PUT', `/api/groups/${id}/settings`, { body: { base_url: url } }), 'base_url', url);
  t.equal((await gw.api('GET', `/api/groups/${id}/settings`)).json.data.base_url, PLAIN, 'the stored base_url is unchanged');
  const updated = await gw.api('PUT', `/api/groups/${id}/settings`, { body: { base_url: 'https://h:8443/other' } });
  t.equal(updated.status, 200);
  t.equal(updated.json.data.base_url, 'https://h:8443/other');
  const upperCase = await gw.api('PUT', `/api/groups/${id}/settings`, { body: { base_url: 'HTTPS://h/v1' } });
  t.equal(upperCase.status, 200, 'the scheme is case-insensitive');
  const longest = await gw.api('PUT', `/api/groups/${id}/settings`, { body: { base_url: LONGEST_HOST } });
  t.equal(longest.status, 200, 'a 253-character host name is accepted on update');
  const createdLongest = await gw.create('/api/groups', { name: 'longest', channel: 'ch32', base_url: LONGEST_HOST });
  t.equal(createdLongest.status, 201, 'and on create');
  t.equal(createdLongest.json.data.base_url, LONGEST_HOST);
});

t.test('a credential endpoint with a query string, fragment, userinfo or another spelling than http(s)://host is refused on connect, import and update', async (t) => {
  const gw = await startGateway(t);
  // ch35's api_key_custom_endpoint kind carries its own `endpoint`.
  const group = (await gw.create('/api/groups', { name: 'custom', channel: 'ch35', base_url: PLAIN, models: [{ external: 'm' }] })).json.data.id as number;
  const base = `/api/groups/${group}/credentials`;
  for (const url of REFUSED) {
    refused(t, await gw.create(`${base}/connect`, { kind: 'api_key_custom_endpoint', fields: { api_key: 'sk-custom-00000001', endpoint: url } }), 'fields.endpoint', url);
    const line = JSON.stringify({ api_key: 'sk-custom-00000002', endpoint: url });
    refused(t, await gw.create(`${base}/import`, { kind: 'api_key_custom_endpoint', credentials: line }), 'credentials.endpoint', url);
  }
  t.same((await gw.api('GET', base)).json.data, [], 'no refused credential was stored');

  const connected = await gw.create(`${base}/connect`, { kind: 'api_key_custom_endpoint', fields: { api_key: 'sk-custom-00000003', endpoint: PLAIN } });
  t.equal(connected.status, 201);
  t.match(connected.json.data.fields, { endpoint: PLAIN });
  const id = connected.json.data.id as number;
  for (const url of REFUSED) refused(t, await gw.api('PATCH', `${base}/${id}`, { body: { fields: { api_key: 'sk-custom-00000004', endpoint: url } } }), 'fields.endpoint', url);
  t.match((await gw.api('GET', `${base}/${id}`)).json.data.fields, { endpoint: PLAIN }, 'the stored endpoint is unchanged');
});
