import { request } from 'node:http';
import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// Raw paths, sent with node:http and a path option: fetch, or a URL string, would resolve the
// dot segments before sending.
function send(url: string, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: unknown }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const req = request({ hostname, port, path, method, headers: { ...headers, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(method === 'GET' || method === 'DELETE' ? undefined : '{"a":1}');
  });
}

t.test('a path parameter that is a dot segment or badly encoded is refused before any upstream call', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  // ch09 serves the responses namespace passthrough (`/v1/responses/{rest*}`) natively.
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: `${upstream.url}/tenant`, models: [], secrets: ['sk-upstream-paths'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const auth = clientAuthHeaders('x-responses', keyValue);

  const cases: Array<[string, string]> = [
    ['DELETE', '/v1/responses/%2e%2e/%2e%2e/v1/files/file-x'],
    ['POST', '/v1/responses/ns/../../../v1/files'],
    ['GET', '/v1/responses/..%2F..%2Fv1%2Forganization'],
    ['GET', '/v1/responses/..'],
    ['GET', '/v1/responses/%2E'],
    ['GET', '/v1/responses/%'],
    ['POST', '/v1/responses/ns/%E0%A4%A'],
  ];
  for (const [method, path] of cases) {
    const res = await send(gw.url, method, path, auth);
    t.equal(res.status, 400, `${method} ${path}: status`);
    t.match(res.body, { error: { code: 'invalid_path_parameter', type: 'invalid_request_error' } }, `${method} ${path}: error`);
    const record = await waitForLog(gw, res.headers['x-switchyard-request-id'] as string);
    t.match(record, { status: 400, error_code: 'invalid_path_parameter', attempt_count: 0 }, `${method} ${path}: logged`);
  }
  t.same(upstream.requests, [], 'the upstream received nothing');

  // Encoded characters that are not dot segments still reach the passthrough, re-encoded.
  const ok = await send(gw.url, 'POST', '/v1/responses/ns/a%20b/..c', auth);
  t.equal(ok.status, 200);
  t.equal(upstream.requests[0]?.url, '/tenant/v1/responses/ns/a%20b/..c');
});

t.test('a generate-style model segment that is badly encoded answers 400 in the generate error shape', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'm' }], secrets: ['sk-upstream-paths'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const res = await send(gw.url, 'POST', '/v1beta/models/%:generateContent', clientAuthHeaders('x-generate', keyValue));
  t.equal(res.status, 400);
  t.match(res.body, { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'invalid_path_parameter' }] } });
  t.same(upstream.requests, []);
});

// A generate-style model is a resource name (docs/data-plane.md, "Model lists"): the genai SDK
// sends `models/org/name:generateContent` unencoded, and Group schemas allow `/` and `:` in names.
t.test('a generate-style model path parameter takes slashes and colons up to the last :verb', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const models = [
    { external: 'a:b', upstream: 'vendor-ab' },
    { external: 'org/name', upstream: 'org/up' },
  ];
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models, secrets: ['sk-upstream-paths'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const auth = clientAuthHeaders('x-generate', keyValue);

  const colon = await send(gw.url, 'POST', '/v1beta/models/a:b:generateContent', auth);
  t.equal(colon.status, 200, 'a:b');
  t.equal(upstream.requests[0]?.url, '/v1beta/models/vendor-ab:generateContent', 'the mapped model reaches the upstream');
  t.match(await waitForLog(gw, colon.headers['x-switchyard-request-id'] as string), { operation: 'generate-content', external_model: 'a:b', upstream_model: 'vendor-ab' });

  const slash = await send(gw.url, 'POST', '/v1beta/models/org/name:countTokens', auth);
  t.equal(slash.status, 200, 'org/name');
  // The upstream model is one path segment: its slash is percent-encoded.
  t.equal(upstream.requests[1]?.url, `/v1beta/models/${encodeURIComponent('org/up')}:countTokens`);

  const got = await send(gw.url, 'GET', '/v1beta/models/org/name', auth);
  t.equal(got.status, 200);
  t.match(got.body, { name: 'models/org/name' });

  // The same path with another method is still the operation's (405), not models.get of `a:b:generateContent`.
  const other = await send(gw.url, 'GET', '/v1beta/models/a:b:generateContent', auth);
  t.equal(other.status, 405);
  t.equal(other.headers['allow'], 'POST');
  t.equal(upstream.requests.length, 2, 'only the two operations reached the upstream');
});

t.test('each segment of a generate-style model is checked: a dot segment is refused', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await seedGroup(gw.store, { channel: 'ch15', baseUrl: upstream.url, models: [{ external: 'x', upstream: 'x' }], secrets: ['sk-upstream-paths'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-generate'] });
  const auth = clientAuthHeaders('x-generate', keyValue);
  const cases: Array<[string, string]> = [
    ['POST', '/v1beta/models/org/../x:generateContent'],
    ['POST', '/v1beta/models/org/%2e%2e/x:streamGenerateContent'],
    ['POST', '/v1beta/models/./x:countTokens'],
    ['POST', '/v1beta/models/org%2F..%2Fx:generateContent'],
    ['GET', '/v1beta/models/org/..'],
    ['POST', '/v1beta/models/org/%E0%A4%A:generateContent'],
  ];
  for (const [method, path] of cases) {
    const res = await send(gw.url, method, path, auth);
    t.equal(res.status, 400, `${method} ${path}: status`);
    t.match(res.body, { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'invalid_path_parameter' }] } }, `${method} ${path}: error`);
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});

t.test('a response id path parameter stays one segment', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await seedGroup(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [], secrets: ['sk-upstream-paths'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-responses'] });
  const res = await send(gw.url, 'GET', '/v1/responses/resp_1/extra/input_items', clientAuthHeaders('x-responses', keyValue));
  t.equal(res.status, 200);
  // Namespace passthrough, forwarded as sent, not the input items of `resp_1/extra` (which would reach `resp_1%2Fextra`).
  t.equal(upstream.requests[0]?.url, '/v1/responses/resp_1/extra/input_items');
  t.match(await waitForLog(gw, res.headers['x-switchyard-request-id'] as string), { operation: 'responses-namespace' });
});
