import t from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';

// Note 8: "ch03 native endpoints exclude files, batch, agents, conversations and browser
// sessions with temporary tokens." The vendor's paths for them, asked of a ch03 Group with a
// key allowing every protocol ch03 serves: no route, answered by the gateway, nothing upstream.

const EXCLUDED: [string, string][] = [
  ['POST', '/v1/files'],
  ['GET', '/v1/files/file-1/content'],
  ['POST', '/v1/batch/jobs'],
  ['GET', '/v1/batch/jobs/job-1'],
  ['POST', '/v1/agents'],
  ['POST', '/v1/agents/completions'],
  ['POST', '/v1/conversations'],
  ['POST', '/v1/conversations/conv-1'],
  ['POST', '/v1/audio/transcriptions/realtime/sessions'],
  ['POST', '/x-suite/v1/files'],
];

t.test('ch03: files, batch, agents, conversations and temporary-token sessions are no route (note 8)', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'm', upstream: 'vendor-m' }], secrets: ['sk-up-ch03'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite', 'x-completions', 'x-chat-embeddings'] });
  for (const [method, path] of EXCLUDED) {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
      ...(method === 'GET' ? {} : { body: JSON.stringify({ model: 'm' }) }),
    });
    t.equal(res.status, 404, `${method} ${path}`);
    t.match(await res.json(), { error: { code: 'route_not_found', type: 'not_found_error' } }, `${method} ${path}: route_not_found`);
    t.match(await waitForLog(gw, res.headers.get('x-switchyard-request-id')), { status: 404, error_code: 'route_not_found', attempt_count: 0 });
  }
  t.same(upstream.requests, [], 'the upstream received nothing');
});
