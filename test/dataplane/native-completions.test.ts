import t from 'tap';
import { startDataPlane, seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';

t.test('chat completions forwarded natively: model mapped, credentials swapped, unknown fields kept, log written', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    const body = JSON.parse(req.body.toString());
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'up-123' });
    res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }));
  });
  const { keyValue, key } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-model', upstream: 'vendor-model-1' }], protocols: ['x-completions'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'team-model', messages: [{ role: 'user', content: 'hello' }], vendor_extension: { keep: true } }),
  });
  t.equal(res.status, 200);
  const body = (await res.json()) as { model: string };
  t.equal(body.model, 'vendor-model-1');
  t.ok(res.headers.get('x-switchyard-request-id'));
  const seen = upstream.requests[0]!;
  t.equal(seen.url, '/v1/chat/completions');
  t.equal(seen.headers.authorization, 'Bearer sk-upstream-1');
  t.notMatch(JSON.stringify(seen.headers), keyValue, 'the client key never reaches the upstream');
  const sent = JSON.parse(seen.body.toString());
  t.same(sent.vendor_extension, { keep: true });
  t.equal(sent.model, 'vendor-model-1');

  await gw.logs.flush();
  const record = await gw.logs.get(res.headers.get('x-switchyard-request-id')!);
  t.match(record, { access_key_id: key.id, channel: 'ch02', protocol: 'x-completions', operation: 'chat-completions', route_mode: 'N', effective: 'native', external_model: 'team-model', upstream_model: 'vendor-model-1', status: 200, attempt_count: 1 });
  t.match(record?.usage, { input_tokens: 7, output_tokens: 3 });
  t.equal(record?.request_body, undefined, 'no body recorded unless the key asks');
});

t.test('refusals come back in the client protocol with the reason code', async (t) => {
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: 'http://127.0.0.1:9', models: [{ external: 'm', upstream: 'm' }], protocols: ['x-completions'] });
  const noKey = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
  t.equal(noKey.status, 401);
  t.match(await noKey.json(), { error: { code: 'access_key_invalid', type: 'authentication_error' } });
  const notAllowed = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': keyValue }, body: JSON.stringify({ model: 'm' }) });
  t.equal(notAllowed.status, 403);
  t.match(await notAllowed.json(), { type: 'error', error: { type: 'permission_error', code: 'protocol_not_allowed' } });
  const unknownModel = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}` }, body: JSON.stringify({ model: 'other' }) });
  t.equal(unknownModel.status, 404);
  t.match(await unknownModel.json(), { error: { code: 'model_not_visible' } });
});
