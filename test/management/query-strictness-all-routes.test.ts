import t from 'tap';
import { SchemaValidator } from '../../src/http/schema-validator.ts';
import { allRoutes } from '../../src/management/all-routes.ts';
import type { RouteDef } from '../../src/management/route-def.ts';
import { logRecord } from './support/log-records.ts';
import { seedAccessKey, startGateway, type Gateway } from './support/gateway.ts';

// docs/management-api.md: "an unknown or repeated [query] parameter is VALIDATION_FAILED" on
// every operation, whatever its method, before any lookup (so any id in the path will do).

/** The registered table (method and pattern from the router), each with the parameters its RouteDef declares. */
function registeredRoutes(gw: Gateway): Array<{ method: string; path: string; query: readonly string[] }> {
  const defs: RouteDef[] = allRoutes({
    store: gw.server.store,
    logs: gw.server.logs,
    clock: gw.clock.read,
    validator: new SchemaValidator({}),
    log: () => undefined,
    fetch,
    version: '0.0.0',
    startedAt: 0,
    priceCatalog: [],
    modelDiscovery: undefined,
    credentialFlows: undefined,
    quotaOf: async () => null,
  });
  return gw.server.managementRoutes().map(({ method, path }) => {
    const def = defs.find((d) => d.method === method && `/api${d.path}` === path);
    if (def === undefined) throw new Error(`no RouteDef for ${method} ${path}`);
    return { method, path, query: def.query ?? [] };
  });
}

/** Every path parameter filled with an id that names nothing. */
const filled = (pattern: string) => pattern.replace(/:[A-Za-z_]+(\([^)]*\))?/g, '999999');

t.test('every registered route refuses an unknown query parameter and a repeated declared one with 400', async (t) => {
  const gw = await startGateway(t);
  const routes = registeredRoutes(gw);
  t.ok(routes.length >= 40, `the table has the management routes (${routes.length})`);
  t.ok(routes.some((r) => r.method !== 'GET'), 'non-GET routes are in the table');
  for (const { method, path, query } of routes) {
    const target = filled(path);
    const unknown = await gw.api(method, `${target}?zz_unknown=1`);
    t.equal(unknown.status, 400, `${method} ${target}?zz_unknown=1`);
    t.match(unknown.json, { code: 'VALIDATION_FAILED', data: { field: 'zz_unknown', reason: 'unknown_field' } }, `${method} ${path}`);
    for (const name of query) {
      const repeated = await gw.api(method, `${target}?${name}=1&${name}=2`);
      t.equal(repeated.status, 400, `${method} ${target}?${name} twice`);
      t.match(repeated.json, { code: 'VALIDATION_FAILED', data: { field: name, reason: 'repeated' } }, `${method} ${path} ${name}`);
      const once = await gw.api(method, `${target}?${name}=1`);
      t.notMatch(once.json ?? {}, { data: { field: name, reason: 'unknown_field' } }, `${method} ${path}: declared ${name} is not unknown`);
    }
  }
});

t.test('a repeated declared parameter is refused even where the operation ignores it', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  // An AccessKey sees only its own requests: access_key_id is ignored for it, never read.
  for (const path of ['/api/logs', '/api/usage']) {
    t.equal((await gw.api('GET', `${path}?access_key_id=1`, { token: key.value })).status, 200, `${path}: once is ignored`);
    const res = await gw.api('GET', `${path}?access_key_id=1&access_key_id=2`, { token: key.value });
    t.equal(res.status, 400, `${path}: twice`);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'access_key_id', reason: 'repeated' } });
  }
});

t.test('declared parameters still work', async (t) => {
  const gw = await startGateway(t);
  const stats = await gw.api('GET', '/api/home/statistics?range=24h');
  t.equal(stats.status, 200);
  t.equal(stats.json.data.range, '24h', 'range is read');
  t.equal((await gw.api('GET', '/api/audit?limit=5')).status, 200);
  t.equal((await gw.api('GET', '/api/model-prices?source=manual')).json.data.length, 0, 'no manual prices in a fresh store');
  const usage = await gw.api('GET', '/api/usage?bucket=hour&group_by=model');
  t.equal(usage.status, 200);
  t.match(usage.json.data, { bucket: 'hour', group_by: ['model'] });
  t.equal((await gw.api('GET', '/api/audit?limit=0')).status, 400, 'a declared parameter is still validated by its reader');
});

t.test('memory log store: only a cursor it issued pages on', async (t) => {
  const gw = await startGateway(t);
  const base = gw.clock.now - 10 * 3_600_000;
  for (let i = 0; i < 5; i++) gw.server.logs.append(logRecord({ request_id: `m${i}`, created_at: base + i * 3_600_000 }));

  const page1 = await gw.api('GET', '/api/logs?limit=2');
  t.same(page1.json.data.items.map((r: { request_id: string }) => r.request_id), ['m4', 'm3']);
  const issued: string = page1.json.data.next_cursor;
  t.type(issued, 'string');
  const page2 = await gw.api('GET', `/api/logs?limit=2&cursor=${encodeURIComponent(issued)}`);
  t.same(page2.json.data.items.map((r: { request_id: string }) => r.request_id), ['m2', 'm1'], 'the issued cursor pages on');
  const page3 = await gw.api('GET', `/api/logs?limit=2&cursor=${encodeURIComponent(page2.json.data.next_cursor)}`);
  t.same(page3.json.data.items.map((r: { request_id: string }) => r.request_id), ['m0']);
  t.equal(page3.json.data.next_cursor, null);

  const text = Buffer.from(issued, 'base64url').toString();
  const b64url = (s: string) => Buffer.from(s).toString('base64url');
  const at = base + 3 * 3_600_000;
  const refused: Array<[string, string]> = [
    ['created_at 1e400 (Infinity)', b64url('[1e400,"x"]')],
    ['a float created_at', b64url(`[${at}.5,"m3"]`)],
    ['created_at past the safe integers', b64url(`[${Number.MAX_SAFE_INTEGER + 1},"m3"]`)],
    ['the issued cursor padded', `${issued}==`],
    ['the issued text with a space', b64url(text.replace(',', ', '))],
    ['an exponent spelling of created_at', b64url(`[${at / 1000}e3,"m3"]`)],
    ['a third element', b64url(`[${at},"m3",1]`)],
    ['a number as request_id', b64url(`[${at},3]`)],
    ['not JSON', b64url('m3')],
  ];
  const standard = Buffer.from(text).toString('base64');
  if (standard !== issued) refused.push(['the issued text in standard base64', standard]);
  // An issued-looking text whose standard base64 needs padding: `[1,"a"]` is 7 bytes.
  refused.push(['a cursor text in standard base64, padded', Buffer.from('[1,"a"]').toString('base64')]);
  t.equal((await gw.api('GET', `/api/logs?cursor=${b64url('[1,"a"]')}`)).status, 200, 'the same text in base64url is well formed');
  for (const [what, cursor] of refused) {
    t.not(cursor, issued);
    const res = await gw.api('GET', `/api/logs?limit=2&cursor=${encodeURIComponent(cursor)}`);
    t.equal(res.status, 400, `${what}: ${cursor.slice(0, 40)}`);
    t.match(res.json, { code: 'VALIDATION_FAILED', data: { field: 'cursor', reason: 'invalid_value' } }, what);
  }
});
