import t from 'tap';
import OpenAI from 'openai';
import Anthropic, { RateLimitError } from '@anthropic-ai/sdk';
import { chatCompletion, jsonBody, logOf, message, rig, writeJson } from './helpers/vendor-wire.ts';

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
