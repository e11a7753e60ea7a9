import t, { type Test } from 'tap';
import OpenAI, { NotFoundError as OpenAINotFoundError } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { logOf } from './helpers/vendor-wire.ts';

// Model names with colons (fine-tuned, tagged and versioned names): the openai and anthropic
// SDKs put them in `GET /v1/models/{model}` unencoded, and the gateway answers them like any
// other visible model (docs/data-plane.md, "Model lists").

const NAMES = ['ft:gpt-4o-mini-2024-07-18:org::abc', 'llama3:8b', 'anthropic.claude-3-5-sonnet-20240620-v1:0'];

async function setup(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(500);
    res.end();
  });
  await gw.store.groups.create({ name: 'colons', channel: 'ch02', base_url: upstream.url, models: NAMES.map((name) => ({ external: name, upstream: `up-${NAMES.indexOf(name)}` })) });
  const key = await gw.store.accessKeys.create({ name: 'k', protocols: ['x-completions', 'x-messages'] });
  return { gw, upstream, key: key.value };
}

t.test('openai models.retrieve() of a name with colons: the visible model, logged under models-retrieve', async (t) => {
  const s = await setup(t);
  const openai = new OpenAI({ apiKey: s.key, baseURL: `${s.gw.url}/v1`, maxRetries: 0 });
  for (const name of NAMES) {
    const { data: model, response } = await openai.models.retrieve(name).withResponse();
    t.match(model, { id: name, object: 'model' }, name);
    t.match(await logOf(s.gw, response.headers.get('x-switchyard-request-id')), { protocol: 'models', operation: 'models-retrieve', external_model: name, status: 200 }, `${name}: logged`);
  }
  // A colon name no Group serves is the model's 404, not the route's.
  const err = await openai.models.retrieve('llama3:70b').catch((e: unknown) => e);
  t.type(err, OpenAINotFoundError);
  t.equal((err as OpenAINotFoundError).code, 'model_not_visible');
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});

t.test('anthropic models.retrieve() of a name with colons: the visible model in the messages shape', async (t) => {
  const s = await setup(t);
  const anthropic = new Anthropic({ apiKey: s.key, baseURL: s.gw.url, maxRetries: 0 });
  for (const name of NAMES) {
    const { data: model, response } = await anthropic.models.retrieve(name).withResponse();
    t.match(model, { type: 'model', id: name, display_name: name }, name);
    t.match(await logOf(s.gw, response.headers.get('x-switchyard-request-id')), { protocol: 'models', operation: 'models-retrieve', external_model: name, status: 200 }, `${name}: logged`);
  }
  t.equal(s.upstream.requests.length, 0, 'no upstream was asked');
});
