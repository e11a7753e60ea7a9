import t from 'tap';
import OpenAI from 'openai';
import Anthropic, { APIError, RateLimitError, ServiceUnavailableError } from '@anthropic-ai/sdk';
import { chatCompletion, jsonBody, logOf, message, rig, writeJson, type SdkRig } from './helpers/vendor-wire.ts';

// What the SDKs read from switchyard's answers besides the body: the retry hints that let
// their own retries succeed, and the request id the anthropic SDK exposes.

t.test('openai: an upstream 429 with retry-after-ms on the only credential, then 200: the SDK retry succeeds', async (t) => {
  let calls = 0;
  const r = await rig(t, { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' }, (req, res) => {
    calls += 1;
    if (calls === 1) writeJson(res, 429, { error: { message: 'slow down', type: 'rate_limit', code: 'rate_limit' } }, { 'retry-after-ms': '150' });
    else writeJson(res, 200, chatCompletion(String(jsonBody(req)['model']), 'after the wait'));
  });
  // Without the upstream's hint the credential would cool down for the default 600 s; the SDK
  // honours any retry hint, so one retry is what must go through.
  await r.gw.store.settings.save({ credential_cooldown_seconds: 600 });
  const openai = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 1 });
  const data = await openai.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(data.choices[0]?.message.content, 'after the wait');
  t.equal(r.upstream.requests.length, 2, 'the retry reached the upstream with the same credential');
});

const MESSAGES = { channel: 'ch14', protocols: ['x-messages'], external: 'team-msg', upstreamModel: 'vendor-msg-1' };
const ASK = { model: 'team-msg', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }] };

t.test('anthropic: a message answered without an upstream request-id: _request_id is the log record id', async (t) => {
  const r = await rig(t, MESSAGES, (req, res) => writeJson(res, 200, message(String(jsonBody(req)['model']), 'Bonjour.')));
  const created = new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create(ASK);
  const data = await created;
  // The same answer, not a second request.
  const { response } = await created.withResponse();
  t.equal(r.upstream.requests.length, 1);
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.ok(log, 'the request has a log record');
  t.equal(data._request_id, log!.request_id);
});

t.test('anthropic: an upstream error answered without request-id: the error requestID is the log record id', async (t) => {
  const r = await rig(t, MESSAGES, (_req, res) => writeJson(res, 429, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }, { 'retry-after': '600' }));
  const err = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create(ASK).catch((e: unknown) => e);
  t.type(err, RateLimitError);
  const log = await logOf(r.gw, (err as RateLimitError).headers?.get('x-switchyard-request-id'));
  t.ok(log, 'the request has a log record');
  t.equal((err as RateLimitError).requestID, log!.request_id);
});

t.test('anthropic: a weekly quota refusal is raised at once, not slept on until the week turns', async (t) => {
  const r = await rig(t, MESSAGES, (req, res) => writeJson(res, 200, message(String(jsonBody(req)['model']), 'Bonjour.')));
  await r.gw.store.accessKeys.update(r.keyId, { quota: { per_period: { period: 'week', requests: 1 } } });
  const anthropic = new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 2 });
  await anthropic.messages.create(ASK);
  // The SDK would sleep as long as Retry-After says (up to a week here) before each of its retries.
  const err = await anthropic.messages.create(ASK).catch((e: unknown) => e);
  t.type(err, RateLimitError);
  t.equal((err as RateLimitError).headers?.get('x-should-retry'), 'false');
  t.ok(Number((err as RateLimitError).headers?.get('retry-after')) > 0, 'the refusal still says when the period turns');
  await r.gw.logs.flush();
  const refusals = (await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 10 })).items.filter((item) => item.error_code === 'quota_exceeded');
  t.equal(refusals.length, 1, 'one request, not retried');
  t.equal(r.upstream.requests.length, 1);
});

t.test('openai: a total quota refusal is not retried either', async (t) => {
  const r = await rig(t, { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' }, (req, res) => writeJson(res, 200, chatCompletion(String(jsonBody(req)['model']), 'ok')));
  await r.gw.store.accessKeys.update(r.keyId, { quota: { total: { requests: 1 } } });
  const openai = new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 2 });
  const ask = { model: 'team-chat', messages: [{ role: 'user' as const, content: 'hi' }] };
  await openai.chat.completions.create(ask);
  const err = await openai.chat.completions.create(ask).catch((e: unknown) => e);
  t.type(err, OpenAI.RateLimitError);
  await r.gw.logs.flush();
  const refusals = (await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 10 })).items.filter((item) => item.error_code === 'quota_exceeded');
  t.equal(refusals.length, 1, 'one request, not retried');
});

/** The key's no_available_credential records: one per request the SDK sent. */
async function noCredentialRecords(r: SdkRig) {
  await r.gw.logs.flush();
  return (await r.gw.logs.list({ access_key_id: r.keyId }, { limit: 20 })).items.filter((item) => item.error_code === 'no_available_credential');
}

t.test("anthropic: the only credential cooling down for a day (upstream retry-after: 86400): the 503 is raised at once, not slept on", async (t) => {
  const r = await rig(t, MESSAGES, (_req, res) => writeJson(res, 429, { type: 'error', error: { type: 'rate_limit_error', message: 'daily limit' } }, { 'retry-after': '86400' }));
  // The upstream's own 429 passes through with its retry-after: not the case under test.
  await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create(ASK).catch(() => undefined);
  // Default retries. The signal only keeps a regression (the SDK sleeping a day) from hanging the run.
  const err = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url }).messages.create(ASK, { signal: AbortSignal.timeout(20_000) }).catch((e: unknown) => e);
  t.type(err, ServiceUnavailableError);
  t.equal((err as APIError).errorCode, 'no_available_credential');
  t.equal((err as APIError).headers?.get('x-should-retry'), 'false');
  t.ok(Number((err as APIError).headers?.get('retry-after')) > 86_000, 'the refusal still says when the credential recovers');
  t.equal((await noCredentialRecords(r)).length, 1, 'one request, not retried');
  t.equal(r.upstream.requests.length, 1, 'the cooling credential was not used again');
});

t.test('every credential disabled: the 503 is not retried by either SDK, and carries no wait', async (t) => {
  const r = await rig(t, MESSAGES, (_req, res) => writeJson(res, 401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
  await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create(ASK).catch(() => undefined);
  const err = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url }).messages.create(ASK).catch((e: unknown) => e);
  t.type(err, ServiceUnavailableError);
  t.equal((err as APIError).errorCode, 'no_available_credential');
  t.equal((err as APIError).headers?.get('x-should-retry'), 'false');
  t.equal((err as APIError).headers?.get('retry-after'), null, 'no credential recovers by itself');
  t.equal((await noCredentialRecords(r)).length, 1, 'anthropic: one request, not retried');

  const o = await rig(t, { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' }, (_req, res) => writeJson(res, 401, { error: { message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' } }));
  const ask = { model: 'team-chat', messages: [{ role: 'user' as const, content: 'hi' }] };
  await new OpenAI({ apiKey: o.keyValue, baseURL: `${o.gw.url}/v1`, maxRetries: 0 }).chat.completions.create(ask).catch(() => undefined);
  const oerr = await new OpenAI({ apiKey: o.keyValue, baseURL: `${o.gw.url}/v1` }).chat.completions.create(ask).catch((e: unknown) => e);
  t.type(oerr, OpenAI.InternalServerError);
  t.equal((oerr as InstanceType<typeof OpenAI.APIError>).code, 'no_available_credential');
  t.equal((await noCredentialRecords(o)).length, 1, 'openai: one request, not retried');
});

t.test('openai: the only credential cooling down briefly (upstream retry-after: 2): no x-should-retry, the SDK waits and its retry succeeds', async (t) => {
  let calls = 0;
  const r = await rig(t, { channel: 'ch02', protocols: ['x-completions'], external: 'team-chat', upstreamModel: 'vendor-chat-1' }, (req, res) => {
    calls += 1;
    if (calls === 1) writeJson(res, 429, { error: { message: 'slow down', type: 'rate_limit', code: 'rate_limit' } }, { 'retry-after': '2' });
    else writeJson(res, 200, chatCompletion(String(jsonBody(req)['model']), 'after the cooldown'));
  });
  const ask = { model: 'team-chat', messages: [{ role: 'user' as const, content: 'hi' }] };
  await new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1`, maxRetries: 0 }).chat.completions.create(ask).catch(() => undefined);
  const refusals: Headers[] = [];
  const openai = new OpenAI({
    apiKey: r.keyValue,
    baseURL: `${r.gw.url}/v1`,
    fetch: async (url, init) => {
      const answer = await fetch(url, init);
      if (answer.status === 503) refusals.push(answer.headers);
      return answer;
    },
  });
  const data = await openai.chat.completions.create(ask);
  t.equal(data.choices[0]?.message.content, 'after the cooldown');
  t.equal(refusals.length, 1, 'the SDK met the 503 once, then waited for the credential');
  t.equal(refusals[0]?.get('x-should-retry'), null, 'a short wait is left to the SDK');
  const wait = Number(refusals[0]?.get('retry-after'));
  t.ok(wait >= 1 && wait <= 2, `retry-after ${wait}: what is left of the upstream's 2 s`);
  t.equal((await noCredentialRecords(r)).length, 1);
  t.equal(r.upstream.requests.length, 2, 'the retry reached the upstream with the recovered credential');
});
