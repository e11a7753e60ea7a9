import { connect } from 'node:net';
import t from 'tap';
import { startUpstreamAndDataPlane, seedRoute } from './helpers/data-plane-harness.ts';
import { withTimeout } from './helpers/dataplane-scenarios.ts';
import { logOf, realtimeRoute, startWsUpstream, upgradeAnswer as wsUpgradeAnswer } from './helpers/ws-upstream.ts';

// The upgrade handler, given an upgrade to a path that opens no session (the server serves
// those as plain requests; a caller that hands it every upgrade gets its refusal), answers in
// the error shape an ordinary request to that path gets.

const WEBSOCKET = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';

/** The raw answer to one upgrade request (the handler closes the connection after it). */
function upgradeAnswer(url: string, target: string, headers: string): Promise<{ status: number; body: unknown }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
  socket.write(`GET ${target} HTTP/1.1\r\nHost: gw\r\n${WEBSOCKET}${headers}\r\n`);
  return withTimeout(
    new Promise((resolve, reject) => {
      socket.on('error', reject);
      socket.on('close', () => resolve({ status: Number(received.slice(9, 12)), body: JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) }));
    }),
    5000,
    'the refusal',
  );
}

t.test('a WebSocket upgrade to a path no session opens is refused route_not_found in the shape of the path\'s clients', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => void res.end());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'm-a', upstream: 'v-a' }], protocols: ['x-completions'] });

  const generate = await upgradeAnswer(gw.url, '/v1beta/nope', `x-goog-api-key: ${keyValue}\r\n`);
  t.equal(generate.status, 404);
  t.match(generate.body, { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'route_not_found' }] } }, 'generate-shaped under /v1beta');

  const messages = await upgradeAnswer(gw.url, '/v1/models', `anthropic-version: 2023-06-01\r\nx-api-key: ${keyValue}\r\n`);
  t.equal(messages.status, 404);
  t.match(messages.body, { type: 'error', error: { type: 'not_found_error', code: 'route_not_found' } }, 'messages-shaped for the anthropic SDK\'s model list');

  const completions = await upgradeAnswer(gw.url, '/v1/models', `authorization: Bearer ${keyValue}\r\n`);
  t.equal(completions.status, 404);
  t.match(completions.body, { error: { type: 'not_found_error', code: 'route_not_found', param: null } }, 'completions-shaped for the openai SDK\'s');
  t.notOk((completions.body as { type?: string }).type, 'not the messages shape');
  t.equal(upstream.requests.length, 0);
});

// The record of a refused upgrade: time to first byte only when an upstream's answer went to the
// client, and the route a no_available_credential would have taken (docs/data-plane.md).
t.test('an upstream\'s refusal passed on has a time to first byte; the gateway\'s own no_available_credential has none and names the route', async (t) => {
  const upstream = await startWsUpstream({ refuse: () => ({ status: 500, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"no"}}' }) });
  t.teardown(() => upstream.close());
  const { gw, key, group, wsUrl } = await realtimeRoute(t, upstream.url);

  const passed = await wsUpgradeAnswer(wsUrl);
  t.equal(passed.status, 500);
  t.equal(passed.body, '{"error":{"message":"no"}}', 'the upstream\'s answer, passed on');
  const passedRecord = await logOf(gw, key.id, 500);
  t.match(passedRecord, { error_code: 'upstream_500', credential_id: String });
  t.type(passedRecord.timings.ttfb_ms, 'number', 'its status line was the first byte sent');
  t.ok(passedRecord.timings.ttfb_ms! >= 0);

  // The only credential cools down after the 500.
  const refused = await wsUpgradeAnswer(wsUrl);
  t.equal(refused.status, 503);
  t.match(JSON.parse(refused.body), { error: { code: 'no_available_credential' } });
  const refusedRecord = await logOf(gw, key.id, 503);
  t.match(refusedRecord, { error_code: 'no_available_credential', attempt_count: 0, group_id: String(group.id), channel: 'ch03', upstream_model: 'voice-up', route_mode: String });
  t.equal(refusedRecord.credential_id, null, 'no credential');
  t.equal(refusedRecord.timings.ttfb_ms, null, 'only the gateway\'s own error was sent');
  t.equal(upstream.seen.length, 1, 'the refused one never reached the upstream');
});
