import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { startUpstreamAndDataPlane, seedRoute } from '../dataplane/helpers/data-plane-harness.ts';

// The anthropic SDK reads a response's id from `request-id` (`_request_id`): the gateway's
// messages-style model list and model answers carry it, as its refusals on the route do.

t.test('anthropic models.retrieve() and models.list(): the answer carries request-id, the gateway\'s request id', async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(500);
    res.end();
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch14', baseUrl: upstream.url, models: [{ external: 'team-c', upstream: 'v-c' }], protocols: ['x-messages'] });
  const anthropic = new Anthropic({ apiKey: keyValue, baseURL: gw.url, maxRetries: 0 });

  const { data: model, response: retrieved } = await anthropic.models.retrieve('team-c').withResponse();
  t.equal(model.id, 'team-c');
  t.ok(retrieved.headers.get('x-switchyard-request-id'));
  t.equal(retrieved.headers.get('request-id'), retrieved.headers.get('x-switchyard-request-id'), 'request-id is the gateway\'s request id');
  const again = await anthropic.models.retrieve('team-c');
  t.type(again._request_id, 'string', '_request_id is set');

  const { data: page, response: listed } = await anthropic.models.list().withResponse();
  t.same(
    page.data.map((m) => m.id),
    ['team-c'],
  );
  t.ok(listed.headers.get('request-id'), 'the list has a request-id');
  t.equal(listed.headers.get('request-id'), listed.headers.get('x-switchyard-request-id'), 'the list carries it too');
  t.equal(upstream.requests.length, 0, 'no upstream was asked');
});
