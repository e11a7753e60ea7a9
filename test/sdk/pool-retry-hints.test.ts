import t, { type Test } from 'tap';
import OpenAI, { InternalServerError as OpenAIInternalServerError, RateLimitError } from 'openai';
import Anthropic, { InternalServerError as AnthropicInternalServerError } from '@anthropic-ai/sdk';
import { seedRoute, startDataPlane, startUpstream, type Gateway } from '../dataplane/helpers/data-plane-harness.ts';
import { writeJson } from './helpers/vendor-wire.ts';

// The last answer of a request that left no credential usable carries the pool's retry hint,
// so that an SDK's own retries (two by default) neither hide the real failure behind a
// no_available_credential nor sleep as long as the last of several credentials asked.

async function gatewayFor(t: Test, baseUrl: string, channel: string, protocol: string, external: string, upstreamKeys: string[], clock?: () => number) {
  const gw = await startDataPlane(clock ? { clock } : {});
  t.teardown(() => gw.close());
  const { keyValue, key, group } = await seedRoute(gw.store, { channel, baseUrl, models: [{ external, upstream: 'vendor-m' }], protocols: [protocol], upstreamKeys });
  return { gw, keyValue, keyId: key.id, groupId: group.id };
}

async function recordsOf(gw: Gateway, keyId: number) {
  await gw.logs.flush();
  return (await gw.logs.list({ access_key_id: keyId }, { limit: 20 })).items;
}

t.test('openai, default retries: the only credential answers 500: the SDK raises that 500, told not to retry it', async (t) => {
  const upstream = await startUpstream((_req, res) => writeJson(res, 500, { error: { message: 'boom upstream', type: 'server_error', code: 'server_error' } }));
  t.teardown(() => upstream.close());
  // The gateway's clock stands still: the cooldown (60 s, beyond the 30 s an SDK is left to wait) is all the wait, however slow the machine.
  const now = Date.now();
  const { gw, keyValue, keyId } = await gatewayFor(t, upstream.url, 'ch02', 'x-completions', 'team-chat', ['sk-only'], () => now);
  await gw.store.settings.save({ server_error_cooldown_seconds: 60 });
  const err = await new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1` }).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(err, OpenAIInternalServerError);
  t.equal((err as OpenAIInternalServerError).status, 500);
  t.match((err as OpenAIInternalServerError).message, /boom upstream/, 'the upstream failure, not no_available_credential');
  t.equal((err as OpenAIInternalServerError).headers?.get('x-should-retry'), 'false', 'the credential recovers in 60 s: no retry');
  t.equal((err as OpenAIInternalServerError).headers?.get('retry-after'), '60', 'the wait is still given');
  t.equal((err as OpenAIInternalServerError).headers?.get('retry-after-ms'), '60000');
  t.equal(upstream.requests.length, 1);
  t.same((await recordsOf(gw, keyId)).map((r) => r.error_code), ['upstream_500'], 'one record: no retry came back');
});

t.test('anthropic, default retries: the only credential cannot be reached: the SDK raises upstream_unreachable, told not to retry it', async (t) => {
  const probe = await startUpstream(() => undefined);
  await probe.close();
  const now = Date.now();
  const { gw, keyValue, keyId } = await gatewayFor(t, probe.url, 'ch14', 'x-messages', 'team-msg', ['sk-only'], () => now);
  await gw.store.settings.save({ server_error_cooldown_seconds: 60 });
  const err = await new Anthropic({ apiKey: keyValue, baseURL: gw.url }).messages.create({ model: 'team-msg', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(err, AnthropicInternalServerError);
  t.equal((err as AnthropicInternalServerError).status, 502);
  t.equal((err as AnthropicInternalServerError).errorCode, 'upstream_unreachable');
  t.equal((err as AnthropicInternalServerError).headers?.get('x-should-retry'), 'false', 'the credential recovers in 60 s: no retry');
  t.equal((err as AnthropicInternalServerError).headers?.get('retry-after'), '60');
  t.equal((err as AnthropicInternalServerError).headers?.get('retry-after-ms'), '60000');
  t.same((await recordsOf(gw, keyId)).map((r) => r.error_code), ['upstream_unreachable'], 'one record: no retry came back');
});

t.test('openai: two credentials answer 429 (retry-after 2 and 3600): the 429 passed on says when the pool recovers, the earlier', async (t) => {
  const upstream = await startUpstream((req, res) => {
    const hint = String(req.headers['authorization']).includes('sk-A') ? '2' : '3600';
    writeJson(res, 429, { error: { message: `limited ${hint}`, type: 'rate_limit', code: 'rate_limit' } }, { 'retry-after': hint, 'x-ratelimit-remaining-requests': '0' });
  });
  t.teardown(() => upstream.close());
  // The gateway's clock stands still: the hint is the wait from the same instant the cooldowns were set at, however slow the machine.
  // An hour ahead of the system clock, which the store judges a cooldown by (one already over is not stored).
  const now = Date.now() + 3_600_000;
  const { gw, keyValue, groupId } = await gatewayFor(t, upstream.url, 'ch02', 'x-completions', 'team-chat', ['sk-A', 'sk-B'], () => now);
  const err = await new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  t.type(err, RateLimitError);
  t.equal(upstream.requests.length, 2, 'both credentials were tried');
  const [a, b] = (await gw.store.credentials.list(groupId)).sort((x, y) => x.id - y.id);
  t.same([a?.cooldown_until, b?.cooldown_until], [new Date(now + 2000).toISOString(), new Date(now + 3_600_000).toISOString()], "each credential cools down for its own answer's Retry-After");
  const headers = (err as RateLimitError).headers!;
  t.equal(headers.get('retry-after'), '2', "retry-after: the first credential's recovery, not the second's");
  t.equal(headers.get('retry-after-ms'), String(Date.parse(a!.cooldown_until!) - now), 'retry-after-ms: the wait until the earliest cooldown ends');
  t.equal(headers.get('x-should-retry'), null, 'within half a minute: the SDK may retry');
  t.equal(headers.get('x-ratelimit-remaining-requests'), '0', "the upstream's other headers as sent");
});
