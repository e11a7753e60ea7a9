import { request, type IncomingMessage } from 'node:http';
import t from 'tap';
import { startUpstream } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, withTimeout } from './helpers/dataplane-scenarios.ts';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { seedAccessKey, seedGroup, startGateway } from '../management/support/gateway.ts';

// A key whose expires_at passes while the request body uploads, the key record unchanged, is
// refused once the body is in, as a new request would be (docs/data-plane.md, step 2).

const BOUND_MS = 30_000;
const BODY = JSON.stringify({ model: 'team-m', messages: [] });

t.test('a key that expires while its body uploads is refused 403 access_key_expired; one that does not is forwarded', async (t) => {
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
  t.teardown(() => upstream.close());
  const gw = await startGateway(t, { mountDataPlane: dataPlaneMount() });
  const groupId = await seedGroup(gw, ['team-m'], { base_url: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }] });
  t.equal((await gw.create(`/api/groups/${groupId}/credentials/import`, { credentials: 'sk-upstream-expiry-0001' })).status, 200);
  const u = new URL(gw.url);

  /** Sends a request whose body goes out once the gateway admitted it (`100 Continue`), the clock moved to `after` in between. */
  const uploadAcross = (value: string, after: number) =>
    withTimeout(
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', headers: { ...clientAuthHeaders('x-completions', value), 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(BODY)), expect: '100-continue' } }, (res: IncomingMessage) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        });
        req.on('error', reject);
        req.on('continue', () => {
          gw.clock.now = after;
          req.end(BODY);
        });
      }),
      BOUND_MS,
      'the answer',
    );

  const expiring = await seedAccessKey(gw, { expires_at: '2026-03-02T12:00:00.000Z' });
  gw.clock.now = Date.parse('2026-03-02T11:59:59.000Z');
  const refused = await uploadAcross(expiring.value, Date.parse('2026-03-02T12:00:00.000Z'));
  t.equal(refused.status, 403);
  t.match(JSON.parse(refused.body), { error: { code: 'access_key_expired' } });
  t.equal(upstream.requests.length, 0, 'nothing reached the upstream');

  const later = await seedAccessKey(gw, { expires_at: '2026-03-02T13:00:00.000Z' });
  gw.clock.now = Date.parse('2026-03-02T11:59:59.000Z');
  t.equal((await uploadAcross(later.value, Date.parse('2026-03-02T12:59:59.999Z'))).status, 200, 'still valid once the body is in');
  const lasting = await seedAccessKey(gw, {});
  t.equal((await uploadAcross(lasting.value, Date.parse('2027-01-01T00:00:00.000Z'))).status, 200, 'a key without expiry');
  t.equal(upstream.requests.length, 2);
});
