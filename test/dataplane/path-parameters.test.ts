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
