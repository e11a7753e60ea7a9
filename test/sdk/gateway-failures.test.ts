import t, { type Test } from 'tap';
import OpenAI, { InternalServerError as OpenAIInternalServerError } from 'openai';
import Anthropic, { GatewayTimeoutError, InternalServerError as AnthropicInternalServerError } from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import { seedRoute, startDataPlane, startUpstream } from '../dataplane/helpers/data-plane-harness.ts';

// Failures of the gateway itself (no upstream answer) reach each SDK as its typed 5xx error,
// in the client's own error shape, with the reason code: never a 500, never a hang.

/** An origin nothing listens on: a server bound to port 0, then closed. */
async function closedOrigin(): Promise<string> {
  const probe = await startUpstream(() => undefined);
  await probe.close();
  return probe.url;
}

/** A gateway whose three SDK routes point at `baseUrl`. */
async function gatewayFor(t: Test, baseUrl: string, options: Parameters<typeof startDataPlane>[0] = {}) {
  const gw = await startDataPlane(options);
  t.teardown(() => gw.close());
  const key = await seedRoute(gw.store, { channel: 'ch02', baseUrl, models: [{ external: 'team-chat', upstream: 'v-chat' }], protocols: ['x-completions', 'x-messages', 'x-generate'] });
  await seedRoute(gw.store, { channel: 'ch14', baseUrl, models: [{ external: 'team-msg', upstream: 'v-msg' }], protocols: ['x-messages'] });
  await seedRoute(gw.store, { channel: 'ch15', baseUrl, models: [{ external: 'team-gen', upstream: 'v-gen' }], protocols: ['x-generate'] });
  return { gw, keyValue: key.keyValue };
}

async function callAll(url: string, keyValue: string) {
  const openai = await new OpenAI({ apiKey: keyValue, baseURL: `${url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  const anthropic = await new Anthropic({ apiKey: keyValue, baseURL: url, maxRetries: 0 }).messages.create({ model: 'team-msg', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  const genai = await new GoogleGenAI({ apiKey: keyValue, httpOptions: { baseUrl: url } }).models.generateContent({ model: 'team-gen', contents: 'x' }).catch((e: unknown) => e);
  return { openai, anthropic, genai };
}

function googleBody(err: unknown): unknown {
  const text = (err as Error).message;
  return JSON.parse(text.slice(text.indexOf('{')));
}

t.test('upstream unreachable: 502 upstream_unreachable as each SDK typed error', async (t) => {
  const { gw, keyValue } = await gatewayFor(t, await closedOrigin());
  const { openai, anthropic, genai } = await callAll(gw.url, keyValue);

  t.type(openai, OpenAIInternalServerError);
  t.equal((openai as OpenAIInternalServerError).status, 502);
  t.equal((openai as OpenAIInternalServerError).code, 'upstream_unreachable');
  t.equal((openai as OpenAIInternalServerError).type, 'server_error', "OpenAI's word for its 5xx");

  t.type(anthropic, AnthropicInternalServerError);
  t.equal((anthropic as AnthropicInternalServerError).status, 502);
  t.equal((anthropic as AnthropicInternalServerError).type, 'api_error');
  t.equal((anthropic as AnthropicInternalServerError).errorCode, 'upstream_unreachable');

  t.type(genai, ApiError);
  t.equal((genai as ApiError).status, 502);
  t.match(googleBody(genai), { error: { code: 502, status: 'UNAVAILABLE', details: [{ reason: 'upstream_unreachable' }] } });
});

t.test('upstream silent past the headers timeout: 504 upstream_timeout as each SDK typed error', async (t) => {
  // An upstream that accepts the request and never answers.
  const silent = await startUpstream(() => undefined);
  t.teardown(() => silent.close());
  const { gw, keyValue } = await gatewayFor(t, silent.url, { headersTimeoutMs: 250 });
  const { openai, anthropic, genai } = await callAll(gw.url, keyValue);

  t.type(openai, OpenAIInternalServerError);
  t.equal((openai as OpenAIInternalServerError).status, 504);
  t.equal((openai as OpenAIInternalServerError).code, 'upstream_timeout');

  t.type(anthropic, GatewayTimeoutError, "the SDK's 504 class");
  t.equal((anthropic as GatewayTimeoutError).type, 'timeout_error', 'the type the messages vendor gives a 504');
  t.equal((anthropic as GatewayTimeoutError).errorCode, 'upstream_timeout');

  t.type(genai, ApiError);
  t.equal((genai as ApiError).status, 504);
  t.match(googleBody(genai), { error: { code: 504, status: 'DEADLINE_EXCEEDED', details: [{ reason: 'upstream_timeout' }] } });
});
