import t, { type Test } from 'tap';
import OpenAI from 'openai';
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';
import { logOf } from './helpers/vendor-wire.ts';

// The openai and anthropic SDKs send their timeout (`x-stainless-timeout`, whole seconds). With
// the gateway's headers timeout as long (the defaults are both 600 s), the SDK's timer, started
// first, ran out first: it retried (three upstream requests) and never read the 504 that says
// not to. The gateway answers a second before the SDK would give up.

/** As long as the SDKs' timeout here, as request_timeout_seconds' default is as long as theirs. */
const TIMEOUT_MS = 3000;
/** Far above the SDKs' backoff for two retries; only bounds a hung test. */
const BOUND_MS = 30_000;

async function silentGateway(t: Test) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, () => undefined, { headersTimeoutMs: TIMEOUT_MS });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'v-chat' }], protocols: ['x-completions', 'x-messages'] });
  await seedRoute(gw.store, { channel: 'ch14', baseUrl: upstream.url, models: [{ external: 'team-msg', upstream: 'v-msg' }], protocols: ['x-messages'] });
  return { upstream, gw, keyValue };
}

t.test('the openai SDK with a request timeout as long as the gateway\'s: one upstream request, the typed 504 upstream_timeout', async (t) => {
  const { upstream, gw, keyValue } = await silentGateway(t);
  // Default retries. openai sends the header for a timeout given with the request.
  const openai = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1` });
  const err = await withTimeout(
    openai.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hi' }] }, { timeout: TIMEOUT_MS }).catch((e: unknown) => e),
    BOUND_MS,
    'the SDK to give up',
  );
  t.type(err, OpenAI.InternalServerError);
  const error = err as InstanceType<typeof OpenAI.InternalServerError>;
  t.equal(error.status, 504);
  t.equal(error.code, 'upstream_timeout');
  t.equal(upstream.requests.length, 1, 'the prompt reached the upstream once');
  t.equal(upstream.requests[0]?.headers['x-stainless-timeout'], String(TIMEOUT_MS / 1000), 'the header the gateway read');
  t.match(await logOf(gw, error.requestID), { status: 504, error_code: 'upstream_timeout' });
});

t.test('the anthropic SDK with a client timeout as long as the gateway\'s: one upstream request, 504', async (t) => {
  const { upstream, keyValue, gw } = await silentGateway(t);
  const anthropic = new Anthropic({ apiKey: keyValue, baseURL: gw.url, timeout: TIMEOUT_MS });
  const err = await withTimeout(
    anthropic.messages.create({ model: 'team-msg', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e),
    BOUND_MS,
    'the SDK to give up',
  );
  t.type(err, AnthropicAPIError);
  t.equal((err as AnthropicAPIError).status, 504);
  t.equal(upstream.requests.length, 1, 'the prompt reached the upstream once');
});
