import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { dataPlaneMount } from '../../src/dataplane/mount-data-plane.ts';
import { startGateway, type Gateway } from '../management/support/gateway.ts';
import { startUpstream, type RecordedUpstreamRequest } from './helpers/data-plane-harness.ts';
import { chatBody, closedPortUrl, completionJson, createKey, seedGroup } from './helpers/dataplane-scenarios.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';

// Vendors' limit, credit and overload answers, judged as their users expect: an OpenAI 403 about
// a model or the gateway's region is not the key's fault; a 402 (out of credit) fails over and
// cools the key down; a hint-less overload (5xx, 529, no connection) cools it down only for
// server_error_cooldown_seconds, and the client is told to retry after that.

const MODEL_DENIED = JSON.stringify({ error: { message: 'Project `proj_abc` does not have access to model `gpt-4.1`', type: 'invalid_request_error', param: null, code: 'model_not_found' } });
const REGION_DENIED = JSON.stringify({ error: { code: 'unsupported_country_region_territory', message: 'Country, region, or territory not supported', param: null, type: 'request_forbidden' } });
const NO_BALANCE = JSON.stringify({ error: { message: 'Insufficient Balance', type: 'unknown_error', param: null, code: 'invalid_request_error' } });

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

const modelOf = (req: RecordedUpstreamRequest) => String(JSON.parse(req.body.toString() || '{}').model);

function okAnswer(req: RecordedUpstreamRequest, res: ServerResponse): void {
  if (req.url?.startsWith('/v1/embeddings')) return send(res, 200, JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1] }], model: modelOf(req), usage: { prompt_tokens: 1, total_tokens: 1 } }));
  if (req.url?.startsWith('/v1/messages')) return send(res, 200, JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }));
  if (req.url?.includes(':generateContent')) return send(res, 200, JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } }));
  send(res, 200, completionJson(modelOf(req)));
}

interface CredentialRow {
  id: number;
  state: string;
  disabled_reason: string | null;
  cooldown_until: string | null;
}

const PROTOCOLS = ['x-completions', 'x-chat-embeddings', 'x-messages', 'x-generate'];

async function setup(t: Test, o: { channel?: string; secrets: string[]; models?: { external: string; upstream: string }[]; baseUrl?: string; settings?: Record<string, number> }, respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void = okAnswer) {
  const upstream = await startUpstream(respond);
  t.teardown(() => upstream.close());
  const gw: Gateway = await startGateway(t, { mountDataPlane: dataPlaneMount(), clock: Date.now });
  if (o.settings !== undefined) t.equal((await gw.api('PUT', '/api/settings', { body: o.settings })).status, 200, 'settings saved');
  const models = o.models ?? [{ external: 'team', upstream: 'vendor-model' }];
  const { group, credentials } = await seedGroup(gw.server.store, { channel: o.channel ?? 'ch02', baseUrl: o.baseUrl ?? upstream.url, models, secrets: o.secrets });
  const { keyValue } = await createKey(gw.server.store, { protocols: PROTOCOLS });
  const listed = async () => {
    const rows = ((await gw.api('GET', `/api/groups/${group.id}/credentials`)).json as { data: CredentialRow[] }).data;
    return (secret: string) => rows.find((c) => c.id === credentials[o.secrets.indexOf(secret)]!.id)!;
  };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'x-api-key': keyValue, 'x-goog-api-key': keyValue, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const chat = (model = 'team') => post('/v1/chat/completions', chatBody(model));
  const embed = (model = 'team') => post('/v1/embeddings', { model, input: 'hi' });
  const message = () => post('/v1/messages', { model: 'team', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  const generate = () => post('/v1beta/models/team:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
  return { upstream, gw, keyValue, listed, chat, embed, message, generate };
}

/** That a credential cools down for `seconds` from an attempt made between `from` and now. */
function coolsFor(t: Test, row: CredentialRow, from: number, seconds: number): void {
  const to = Date.now();
  const until = row.cooldown_until === null ? NaN : Date.parse(row.cooldown_until);
  t.equal(row.state, 'cooldown', `credential ${row.id} cools down`);
  t.ok(until >= from + seconds * 1000 && until <= to + seconds * 1000, `for ${seconds} s: until ${row.cooldown_until}`);
}

t.test('an OpenAI 403 model_not_found is no verdict on the key: another key that has the model serves, every key stays active', async (t) => {
  const secrets = ['sk-a', 'sk-b', 'sk-c'];
  const models = [{ external: 'mini', upstream: 'gpt-4o-mini' }, { external: 'big', upstream: 'gpt-4.1' }];
  // Only sk-a's project lacks gpt-4.1.
  const { upstream, listed, chat } = await setup(t, { secrets, models }, (req, res) => (modelOf(req) === 'gpt-4.1' && secretOf(req) === 'sk-a' ? send(res, 403, MODEL_DENIED) : okAnswer(req, res)));
  // Round-robin starts anywhere: three requests meet sk-a at least once.
  for (let i = 0; i < secrets.length; i++) t.equal((await chat('big')).status, 200, 'served by a key whose project has the model');
  t.ok(upstream.requests.some((r) => secretOf(r) === 'sk-a' && modelOf(r) === 'gpt-4.1'), 'sk-a was asked and refused');
  const state = await listed();
  for (const s of secrets) t.same([state(s).state, state(s).disabled_reason], ['active', null], `${s} stays active`);
  for (let i = 0; i < secrets.length; i++) t.equal((await chat('mini')).status, 200, 'the other model is served');
});

t.test('an OpenAI 403 model_not_found from every key goes to the client as sent, and disables none', async (t) => {
  const secrets = ['sk-a', 'sk-b', 'sk-c'];
  const models = [{ external: 'mini', upstream: 'gpt-4o-mini' }, { external: 'big', upstream: 'gpt-4.1' }];
  const { upstream, listed, chat } = await setup(t, { secrets, models }, (req, res) => (modelOf(req) === 'gpt-4.1' ? send(res, 403, MODEL_DENIED) : okAnswer(req, res)));
  const denied = await chat('big');
  t.equal(denied.status, 403);
  t.same(await denied.json(), JSON.parse(MODEL_DENIED), 'the upstream body, as sent');
  t.same(new Set(upstream.requests.map(secretOf)), new Set(secrets), 'each key was asked once (max_attempts_per_request 3)');
  const state = await listed();
  for (const s of secrets) t.same([state(s).state, state(s).disabled_reason], ['active', null], `${s} stays active`);
  for (let i = 0; i < secrets.length; i++) t.equal((await chat('mini')).status, 200, 'the other model is served');
});

t.test('an OpenAI 403 about the region disables no key and moves on, also from an operation not replay_safe', async (t) => {
  const secrets = ['sk-a', 'sk-b', 'sk-c'];
  // sk-c goes out through an address the vendor serves (its own proxy, say); the others do not.
  const { upstream, listed, chat, embed } = await setup(t, { channel: 'ch03', secrets }, (req, res) => (secretOf(req) === 'sk-c' ? okAnswer(req, res) : send(res, 403, REGION_DENIED)));
  for (const [name, call] of [['chat', chat], ['embeddings', embed]] as const) {
    for (let i = 0; i < secrets.length; i++) t.equal((await call()).status, 200, `${name}: served by the key the region allows`);
  }
  t.ok(upstream.requests.some((r) => secretOf(r) !== 'sk-c'), 'the refused keys were asked');
  const state = await listed();
  for (const s of secrets) t.same([state(s).state, state(s).disabled_reason], ['active', null], `${s} stays active`);
});

// Other vendors' refusals about the model, the input or the caller's region, as they send them (their docs and public reports).
const NOT_THE_KEY: { vendor: string; channel: string; call: 'chat' | 'message'; body: string; status?: number; headers?: Record<string, string> }[] = [
  { vendor: 'Groq, a model blocked for the organization', channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { message: 'The model `openai/gpt-oss-120b` is blocked at the organization level.', type: 'permissions_error', code: 'model_permission_blocked_org' } }) },
  { vendor: 'Groq, a model blocked for the project', channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { message: 'The model `openai/gpt-oss-120b` is blocked at the project level.', type: 'permissions_error', code: 'model_permission_blocked_project' } }) },
  { vendor: 'DashScope, a model not activated', channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { message: 'Access to model denied. Please make sure you are eligible for using the model.', type: 'AccessDenied.Unpurchased', code: 'AccessDenied.Unpurchased' } }) },
  { vendor: "OpenRouter's moderation", channel: 'ch29', call: 'chat', body: JSON.stringify({ error: { code: 403, message: 'openai/gpt-4o requires moderation on OpenRouter. Your input was flagged for "harassment".', metadata: { reasons: ['harassment'], flagged_input: 'the flagged text...', provider_name: 'OpenAI', model_slug: 'openai/gpt-4o' } } }) },
  { vendor: "OpenRouter passing on OpenAI's region refusal", channel: 'ch29', call: 'chat', body: JSON.stringify({ error: { message: 'Provider returned error', code: 403, metadata: { raw: JSON.stringify({ error: { code: 'unsupported_country_region_territory', message: 'Country, region, or territory not supported', param: null, type: 'request_forbidden' } }), provider_name: 'OpenAI' } } }) },
  { vendor: "Anthropic's region refusal", channel: 'ch14', call: 'message', body: JSON.stringify({ error: { type: 'forbidden', message: 'Request not allowed' } }) },
  // No code that says so: the message does.
  { vendor: "OpenAI's organization verification, code null", channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { message: 'Your organization must be verified to use the model `gpt-image-1`. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization.', type: 'invalid_request_error', param: null, code: null } }) },
  { vendor: "xAI's content refusal, `error` a string", channel: 'ch02', call: 'chat', body: JSON.stringify({ code: 'The caller does not have permission to execute the specified operation', error: 'Content violates usage guidelines. Team: 0f1e, API key ID: 9a8b, Model: grok-4, Failed check: SAFETY_CHECK_TYPE_BIO' }) },
  { vendor: "Azure's network rules, code the status's digits", channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { code: '403', message: 'Access denied due to Virtual Network/Firewall rules.' } }) },
  { vendor: "OpenAI's restricted key outside its scopes, a 401 with code null", channel: 'ch02', call: 'chat', status: 401, body: JSON.stringify({ error: { message: "You have insufficient permissions for this operation. Missing scopes: api.responses.write. Check that you have the correct role in your organization (Reader, Writer, Owner) and project (Member, Owner), and if you're using a restricted API key, that it has the necessary scopes.", type: 'invalid_request_error', param: null, code: null } }) },
  { vendor: "Fireworks' key class refused for a route", channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { object: 'error', type: 'invalid_request_error', code: 'FORBIDDEN', message: 'Fire Pass API keys are not authorized for this route.' } }) },
  { vendor: "Kimi Code's refusal of a client not on its allowlist", channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { message: 'Kimi For Coding is currently only available for Coding Agents such as Kimi CLI, Claude Code, Roo Code, Kilo Code, etc.', type: 'access_terminated_error' } }) },
  { vendor: 'Volcengine Ark, a model service not activated', channel: 'ch02', call: 'chat', body: JSON.stringify({ error: { code: 'OperationDenied.ServiceNotOpen', message: 'Your account has not activated the model service.', param: '', type: 'Forbidden' } }) },
  { vendor: "a relay's region refusal in Anthropic's shape", channel: 'ch14', call: 'message', body: JSON.stringify({ type: 'error', error: { type: 'RegionError', message: 'This model is not available in your country.' } }) },
  // Not the vendor's API at all: a CDN's challenge or an address block, as a web page.
  { vendor: "Cloudflare's challenge page", channel: 'ch02', call: 'chat', headers: { 'content-type': 'text/html; charset=UTF-8', 'cf-mitigated': 'challenge' }, body: '<!DOCTYPE html><html><head><title>Just a moment...</title></head><body></body></html>' },
  { vendor: 'an address block as HTML sent as JSON', channel: 'ch14', call: 'message', body: '\n<!doctype html>\n<title>403</title>403 Forbidden' },
];

for (const c of NOT_THE_KEY) {
  t.test(`${c.vendor}: no verdict on the key, the next one serves`, async (t) => {
    const secrets = ['sk-refused', 'sk-ok'];
    const { listed, chat, message } = await setup(t, { channel: c.channel, secrets }, (req, res) => (secretOf(req) === 'sk-refused' ? send(res, c.status ?? 403, c.body, c.headers) : okAnswer(req, res)));
    // Round-robin starts anywhere: two requests meet sk-refused once.
    for (let i = 0; i < secrets.length; i++) t.equal((await (c.call === 'chat' ? chat() : message())).status, 200, 'served by the other key');
    const state = await listed();
    for (const s of secrets) t.same([state(s).state, state(s).disabled_reason], ['active', null], `${s} stays active`);
  });
}

// DashScope's compatible mode, an account whose free quota is spent while it allows no paid use (APIParkLab/APIPark#394: sent 400 too).
const FREE_TIER_ONLY = JSON.stringify({ error: { message: 'The free tier of the model has been exhausted. If you wish to continue access the model on a paid basis, please disable the "use free tier only" mode in the management console.', type: 'AllocationQuota.FreeTierOnly', param: null, code: 'AllocationQuota.FreeTierOnly' }, id: 'chatcmpl-9ad5f6e5', request_id: '9ad5f6e5' });

// Refusals about the account's credit or spending cap: the key is not revoked, a top-up or a raised cap brings it back.
const BILLING: { vendor: string; channel: string; body: string; status?: number; call?: 'chat' | 'message' }[] = [
  { vendor: "xAI's team without credits", channel: 'ch02', body: JSON.stringify({ code: 'The caller does not have permission to execute the specified operation', error: "Your newly created team doesn't have any credits yet. You can purchase credits on https://console.x.ai/team/0f1e." }) },
  { vendor: "Moonshot's exhausted quota, no code", channel: 'ch02', body: JSON.stringify({ error: { message: 'Your account org-1 <ak-2> is not active, organization org-1 exceeded current quota, please check your plan and billing details', type: 'exceeded_current_quota_error' } }) },
  { vendor: "OpenRouter's key spending cap", channel: 'ch29', body: JSON.stringify({ error: { message: 'Key limit exceeded (total limit). Manage it using https://openrouter.ai/settings/keys', code: 403 } }) },
  { vendor: 'Volcengine Ark, an overdue account', channel: 'ch02', body: JSON.stringify({ error: { code: 'AccountOverdueError', message: 'The request failed because your account has an overdue balance.', param: '', type: 'Forbidden' } }) },
  { vendor: "SiliconFlow's paid balance, a top-level message", channel: 'ch20', body: JSON.stringify({ code: 30011, message: 'The selected model requires paid balance. Your paid balance is insufficient. Please top up and try again.', data: null }) },
  { vendor: "Kimi Code's monthly usage limit", channel: 'ch02', body: JSON.stringify({ error: { message: "You've reached your monthly usage limit for this billing cycle. Your quota will be refreshed in the next cycle. To continue now, purchase extra usage or upgrade your plan: https://www.kimi.com/code/#pricing", type: 'access_terminated_error' } }) },
  { vendor: "SiliconFlow's account balance, a top-level message", channel: 'ch20', body: JSON.stringify({ code: 30001, message: 'Sorry, your account balance is insufficient', data: null }) },
  { vendor: "DashScope's free tier exhausted in 'use free tier only' mode", channel: 'ch20', body: FREE_TIER_ONLY },
  { vendor: "a one-api / new-api relay's user quota", channel: 'ch35', body: JSON.stringify({ error: { message: 'user quota is not enough (request id: 2025020911093417487821572799492)', type: 'new_api_error', param: '', code: 'insufficient_user_quota' } }) },
  // Kimi Code's Anthropic-compatible endpoint (NanmiCoder/cc-haha#1208).
  { vendor: "Kimi Code's messages-style permission_error about the billing cycle's usage limit", channel: 'ch14', call: 'message', body: JSON.stringify({ error: { type: 'permission_error', message: "You've reached your usage limit for this billing cycle. Your quota will be refreshed in the next cycle. To continue now, purchase extra usage or upgrade your plan: https://www.kimi.com/code/#pricing" }, type: 'error' }) },
  // Not a 401/402/403: Anthropic says an account is out of credit with a 400 (public reports of its API's answer).
  { vendor: "Anthropic's 400 'credit balance is too low'", channel: 'ch14', call: 'message', status: 400, body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.' }, request_id: 'req_011' }) },
  // DashScope's compatible mode, an account in arrears (hsliuping/TradingAgents-CN#170, QwenLM/Qwen#1414).
  { vendor: "DashScope's 400 Arrearage", channel: 'ch20', status: 400, body: JSON.stringify({ error: { code: 'Arrearage', param: null, message: 'Access denied, please make sure your account is in good standing.', type: 'Arrearage' }, id: 'chatcmpl-f9fd', request_id: 'f9fd' }) },
  // Spending caps and budgets answered 400.
  { vendor: "OpenAI's 400 billing hard limit", channel: 'ch35', status: 400, body: JSON.stringify({ error: { code: 'billing_hard_limit_reached', message: 'Billing hard limit has been reached', param: null, type: 'invalid_request_error' } }) },
  { vendor: "DashScope's free tier exhausted in 'use free tier only' mode, as a 400", channel: 'ch35', status: 400, body: FREE_TIER_ONLY },
  { vendor: "a LiteLLM proxy's 400 key budget, code the status's digits", channel: 'ch35', status: 400, body: JSON.stringify({ error: { message: 'Budget has been exceeded! Current cost: 10.02, Max budget: 10.0', type: 'budget_exceeded', param: null, code: '400' } }) },
  // Not a 5xx's few seconds: MiniMax's Anthropic-compatible endpoint answers an account out of balance 500 (MiniMax-AI/MiniMax-M2#62).
  { vendor: "MiniMax's 500 'insufficient balance (1008)'", channel: 'ch19', call: 'message', status: 500, body: JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'insufficient balance (1008)' }, request_id: '05997465cd2ee4bd50b24b216c911b75' }) },
];

for (const c of BILLING) {
  t.test(`${c.vendor}: judged as a 402, the key cools down for credential_cooldown_seconds and the next serves`, async (t) => {
    const secrets = ['sk-broke', 'sk-ok'];
    const { upstream, listed, chat, message } = await setup(t, { channel: c.channel, secrets, settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (req, res) => (secretOf(req) === 'sk-broke' ? send(res, c.status ?? 403, c.body) : okAnswer(req, res)));
    const call = c.call === 'message' ? message : chat;
    const sentAt = Date.now();
    // The Group's rotation starts at its first credential.
    t.equal((await call()).status, 200, 'served by the other key');
    t.same(upstream.requests.map(secretOf), ['sk-broke', 'sk-ok'], 'the refused key, then the next');
    const state = (await listed())('sk-broke');
    t.equal(state.disabled_reason, null, 'not disabled');
    coolsFor(t, state, sentAt, 300);
    t.equal((await call()).status, 200);
    t.same(upstream.requests.slice(2).map(secretOf), ['sk-ok'], 'the refused key is left alone while it cools down');
  });
}

// Refusals of the key itself that come as a 400: disabled as a 401 would be, the reason naming the code when there is one.
const KEY_REFUSED_400: { vendor: string; channel: string; call: 'chat' | 'message'; body: string; reason: string }[] = [
  { vendor: "Anthropic's 'This organization has been disabled.'", channel: 'ch14', call: 'message', reason: 'upstream answered 400 invalid_request_error', body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'This organization has been disabled.' }, request_id: 'req_011' }) },
  // continuedev/continue#10778, i-am-bee/beeai-framework#447: `error` a string, `code` a sentence.
  { vendor: "xAI's 'Incorrect API key provided'", channel: 'ch20', call: 'chat', reason: 'upstream answered 400', body: JSON.stringify({ code: 'Client specified an invalid argument', error: 'Incorrect API key provided: xa***ed. You can obtain an API key from https://console.x.ai.' }) },
  // NVIDIA-NeMo/Guardrails#563, songquanpeng/one-api#1764.
  { vendor: "Groq's organization_restricted", channel: 'ch20', call: 'chat', reason: 'upstream answered 400 organization_restricted', body: JSON.stringify({ error: { message: 'Organization has been restricted. Please reach out to support if you believe this was in error.', type: 'invalid_request_error', code: 'organization_restricted' } }) },
];

for (const c of KEY_REFUSED_400) {
  t.test(`${c.vendor}, a 400: the key is disabled and the next serves`, async (t) => {
    const secrets = ['sk-refused', 'sk-ok'];
    const { upstream, listed, chat, message } = await setup(t, { channel: c.channel, secrets }, (req, res) => (secretOf(req) === 'sk-refused' ? send(res, 400, c.body) : okAnswer(req, res)));
    const call = c.call === 'message' ? message : chat;
    for (let i = 0; i < 3; i++) t.equal((await call()).status, 200, 'served by the other key');
    t.equal(upstream.requests.filter((r) => secretOf(r) === 'sk-refused').length, 1, 'the refused key is tried once, then no more');
    const state = await listed();
    t.same([state('sk-refused').state, state('sk-refused').disabled_reason], ['disabled', c.reason]);
    t.match(state('sk-ok'), { state: 'active' });
  });
}

// Volcengine Ark answers a model the key's account has not activated 404 ModelNotOpen (xinnan-tech/xiaozhi-esp32-server#1234).
const MODEL_NOT_OPEN = JSON.stringify({ error: { code: 'ModelNotOpen', message: 'Your account 2106993666 has not activated the model doubao-pro-32k-functioncall-241028. Please activate the model service in the Ark Console.', param: '', type: 'NotFound' } });

t.test("Volcengine Ark's 404 ModelNotOpen is no verdict on the key: another account's key that has the model serves", async (t) => {
  const secrets = ['ark-a', 'ark-b'];
  const { upstream, listed, chat } = await setup(t, { channel: 'ch20', secrets }, (req, res) => (secretOf(req) === 'ark-a' ? send(res, 404, MODEL_NOT_OPEN) : okAnswer(req, res)));
  for (let i = 0; i < secrets.length; i++) t.equal((await chat()).status, 200, 'served by the key whose account activated the model');
  t.ok(upstream.requests.some((r) => secretOf(r) === 'ark-a'), 'ark-a was asked and refused');
  const state = await listed();
  for (const s of secrets) t.same([state(s).state, state(s).disabled_reason, state(s).cooldown_until], ['active', null, null], `${s} stays active`);
});

t.test("Volcengine Ark's 404 ModelNotOpen from every key goes to the client as sent; any other 404 (OpenAI's model_not_found) is tried once", async (t) => {
  const secrets = ['sk-a', 'sk-b'];
  const missing = JSON.stringify({ error: { message: 'The model `gpt-5-typo` does not exist or you do not have access to it.', type: 'invalid_request_error', param: null, code: 'model_not_found' } });
  const models = [{ external: 'ark', upstream: 'doubao' }, { external: 'typo', upstream: 'gpt-5-typo' }];
  const { upstream, listed, chat } = await setup(t, { channel: 'ch20', secrets, models }, (req, res) => send(res, 404, modelOf(req) === 'doubao' ? MODEL_NOT_OPEN : missing));
  const res = await chat('ark');
  t.equal(res.status, 404);
  t.same(await res.json(), JSON.parse(MODEL_NOT_OPEN), 'the upstream body, as sent');
  t.same(new Set(upstream.requests.map(secretOf)), new Set(secrets), 'each key was asked');
  const typo = await chat('typo');
  t.equal(typo.status, 404);
  t.equal(upstream.requests.length, secrets.length + 1, 'a model that does not exist: one attempt');
  const state = await listed();
  for (const s of secrets) t.same([state(s).state, state(s).disabled_reason, state(s).cooldown_until], ['active', null, null], `${s} stays active`);
});

// A 400 about the request itself, read now for what it may say of the key: still the client's own answer.
for (const [vendor, body] of [
  ['OpenAI, context too long', { error: { message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } }],
  ["DashScope's moderation", { error: { code: 'data_inspection_failed', param: null, message: 'Input data may contain inappropriate content.', type: 'data_inspection_failed' } }],
  ["DeepSeek's bad parameter", { error: { message: 'Invalid max_tokens value, the valid range of max_tokens is [1, 8192]', type: 'invalid_request_error', param: null, code: 'invalid_request_error' } }],
] as const) {
  t.test(`a completions-style 400 (${vendor}) goes to the client as sent, with no verdict and no other key tried`, async (t) => {
    const secrets = ['sk-a', 'sk-b'];
    const { upstream, listed, chat } = await setup(t, { channel: 'ch20', secrets }, (_req, res) => send(res, 400, JSON.stringify(body)));
    const res = await chat();
    t.equal(res.status, 400);
    t.same(await res.json(), body, 'the upstream body, as sent');
    t.equal(upstream.requests.length, 1, 'one attempt');
    const state = await listed();
    for (const s of secrets) t.same([state(s).state, state(s).disabled_reason, state(s).cooldown_until], ['active', null, null], `${s} stays active`);
  });
}

t.test('a 5xx whose message names a region or the request is still the upstream\'s failure: the short cooldown', async (t) => {
  const body = JSON.stringify({ error: { message: 'This model is not available in your region right now: upstream failure', type: 'server_error' } });
  const { listed, chat } = await setup(t, { secrets: ['sk-only'], settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (_req, res) => send(res, 500, body));
  const sentAt = Date.now();
  t.equal((await chat()).status, 500, 'the upstream answer, as sent');
  coolsFor(t, (await listed())('sk-only'), sentAt, 7);
});

t.test('any other messages-style 400 goes to the client as sent, with no verdict and no other key tried', async (t) => {
  const secrets = ['sk-a', 'sk-b'];
  const body = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
  const { upstream, listed, message } = await setup(t, { channel: 'ch14', secrets }, (_req, res) => send(res, 400, body));
  const res = await message();
  t.equal(res.status, 400);
  t.same(await res.json(), JSON.parse(body), 'the upstream body, as sent');
  t.equal(upstream.requests.length, 1, 'one attempt');
  const state = await listed();
  for (const s of secrets) t.same([state(s).state, state(s).disabled_reason], ['active', null], `${s} stays active`);
});

t.test('a key refusal that looks like none of those still disables: an HTML 401, a permission_error, a message in another wording', async (t) => {
  const secrets = ['sk-html', 'sk-perm', 'sk-azure', 'sk-ok'];
  const bodies: Record<string, [number, string, Record<string, string>?]> = {
    // Perplexity answers an invalid key with an HTML 401 behind Cloudflare.
    'sk-html': [401, '<html><head><title>401 Authorization Required</title></head><body><script src="/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1"></script></body></html>', { 'content-type': 'text/html' }],
    'sk-perm': [403, JSON.stringify({ type: 'error', error: { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' } })],
    'sk-azure': [401, JSON.stringify({ error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' } })],
  };
  const { listed, message } = await setup(t, { channel: 'ch14', secrets, settings: { max_attempts_per_request: 4 } }, (req, res) => {
    const answer = bodies[secretOf(req)];
    return answer === undefined ? okAnswer(req, res) : send(res, answer[0], answer[1], answer[2]);
  });
  for (let i = 0; i < secrets.length; i++) t.equal((await message()).status, 200, 'served by the healthy credential');
  const state = await listed();
  t.same([state('sk-html').state, state('sk-html').disabled_reason], ['disabled', 'upstream answered 401']);
  t.same([state('sk-perm').state, state('sk-perm').disabled_reason], ['disabled', 'upstream answered 403 permission_error']);
  t.same([state('sk-azure').state, state('sk-azure').disabled_reason], ['disabled', 'upstream answered 401']);
  t.match(state('sk-ok'), { state: 'active' });
});

t.test("Anthropic's key refusal still disables, its reason naming the error type", async (t) => {
  const secrets = ['sk-revoked', 'sk-ok'];
  const body = JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
  const { listed, message } = await setup(t, { channel: 'ch14', secrets }, (req, res) => (secretOf(req) === 'sk-revoked' ? send(res, 401, body) : okAnswer(req, res)));
  for (let i = 0; i < secrets.length; i++) t.equal((await message()).status, 200);
  const state = await listed();
  t.same([state('sk-revoked').state, state('sk-revoked').disabled_reason], ['disabled', 'upstream answered 401 authentication_error']);
});

t.test('a 401/403 with another code, or none, still disables and fails over; the reason names a token-like code, never the message', async (t) => {
  const secrets = ['sk-revoked', 'sk-plain', 'sk-odd', 'sk-azure', 'sk-ok'];
  const bodies: Record<string, [number, string]> = {
    'sk-azure': [401, JSON.stringify({ error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } })],
    'sk-revoked': [401, JSON.stringify({ error: { message: 'Incorrect API key provided: sk-revoked.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } })],
    'sk-plain': [403, JSON.stringify({ error: { message: 'Forbidden', type: 'invalid_request_error' } })],
    'sk-odd': [401, JSON.stringify({ error: { message: 'no', code: 'key sk-odd is bad' } })],
  };
  const { upstream, listed, chat } = await setup(t, { secrets, settings: { max_attempts_per_request: 5 } }, (req, res) => {
    const answer = bodies[secretOf(req)];
    return answer === undefined ? okAnswer(req, res) : send(res, answer[0], answer[1]);
  });
  // Round-robin starts anywhere: a request per credential reaches each.
  for (let i = 0; i < secrets.length; i++) t.equal((await chat()).status, 200, 'served by the healthy credential');
  t.ok(upstream.requests.length > secrets.length, 'the refused credentials were failed over');
  const state = await listed();
  // Exactly: a pattern would take any reason that begins so.
  t.same([state('sk-revoked').state, state('sk-revoked').disabled_reason], ['disabled', 'upstream answered 401 invalid_api_key']);
  t.same([state('sk-plain').state, state('sk-plain').disabled_reason], ['disabled', 'upstream answered 403']);
  t.same([state('sk-odd').state, state('sk-odd').disabled_reason], ['disabled', 'upstream answered 401'], 'a code that is not token-like is left out');
  t.same([state('sk-azure').state, state('sk-azure').disabled_reason], ['disabled', 'upstream answered 401'], 'a bare number, the status again, is left out');
  t.match(state('sk-ok'), { state: 'active' });
});

t.test('402 out of credit fails over, also from an operation not replay_safe, and cools the key down for credential_cooldown_seconds', async (t) => {
  const secrets = ['sk-broke', 'sk-ok'];
  const { upstream, listed, chat, embed } = await setup(t, { channel: 'ch03', secrets, settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (req, res) => (secretOf(req) === 'sk-broke' ? send(res, 402, NO_BALANCE) : okAnswer(req, res)));
  const sentAt = Date.now();
  // The Group's rotation starts at its first credential.
  t.equal((await embed()).status, 200, 'embeddings served');
  t.same(upstream.requests.map(secretOf), ['sk-broke', 'sk-ok'], 'the broke credential, then the next');
  coolsFor(t, (await listed())('sk-broke'), sentAt, 300);
  for (let i = 0; i < 2; i++) t.equal((await chat()).status, 200, 'chat served');
  t.same(upstream.requests.slice(2).map(secretOf), ['sk-ok', 'sk-ok'], 'the broke credential is left alone while it cools down');
});

for (const [name, channel, call, body] of [
  ['an Anthropic 529 overloaded_error', 'ch14', 'message', { status: 529, text: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_1' }) }],
  ['a Gemini 503 UNAVAILABLE', 'ch15', 'generate', { status: 503, text: JSON.stringify({ error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }) }],
] as const) {
  t.test(`${name} without a hint cools the only credential down for server_error_cooldown_seconds, and the client is told to retry after it`, async (t) => {
    const { listed, ...calls } = await setup(t, { channel, secrets: ['sk-only'], settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (_req, res) => send(res, body.status, body.text));
    const sentAt = Date.now();
    const res = await calls[call]();
    t.equal(res.status, body.status, 'the upstream answer, as sent');
    t.ok(Number(res.headers.get('retry-after')) >= 1 && Number(res.headers.get('retry-after')) <= 7, `retry-after ${res.headers.get('retry-after')}: the short cooldown`);
    t.equal(res.headers.get('x-should-retry'), null, 'nothing tells the SDKs not to retry');
    coolsFor(t, (await listed())('sk-only'), sentAt, 7);
    const refused = await calls[call]();
    t.equal(refused.status, 503, 'no credential usable meanwhile');
    t.ok(Number(refused.headers.get('retry-after')) <= 7, 'its retry-after is the short cooldown left');
    t.equal(refused.headers.get('x-should-retry'), null);
  });
}

t.test("a 503's retry-after wins over server_error_cooldown_seconds", async (t) => {
  const { listed, chat } = await setup(t, { secrets: ['sk-only'], settings: { server_error_cooldown_seconds: 7 } }, (_req, res) => send(res, 503, '{"error":{"message":"busy"}}', { 'retry-after': '20' }));
  const sentAt = Date.now();
  t.equal((await chat()).status, 503);
  coolsFor(t, (await listed())('sk-only'), sentAt, 20);
});

t.test('a 429 without a hint keeps credential_cooldown_seconds', async (t) => {
  const { listed, chat } = await setup(t, { secrets: ['sk-only'], settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (_req, res) => send(res, 429, '{"error":{"message":"slow down","code":"rate_limit_exceeded"}}'));
  const sentAt = Date.now();
  t.equal((await chat()).status, 429);
  coolsFor(t, (await listed())('sk-only'), sentAt, 300);
});

t.test('a failed connection cools the credential down for server_error_cooldown_seconds', async (t) => {
  const { listed, chat } = await setup(t, { secrets: ['sk-only'], baseUrl: await closedPortUrl(), settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } });
  const sentAt = Date.now();
  const res = await chat();
  t.equal(res.status, 502);
  t.equal(res.headers.get('x-should-retry'), null, 'the SDKs may retry');
  coolsFor(t, (await listed())('sk-only'), sentAt, 7);
});

t.test("the openai SDK's own retry of a hint-less 503 on the only credential is served once the short cooldown ends", async (t) => {
  let answered = 0;
  const { gw, keyValue, upstream } = await setup(t, { secrets: ['sk-only'], settings: { server_error_cooldown_seconds: 1 } }, (req, res) => (answered++ === 0 ? send(res, 503, '{"error":{"message":"overloaded"}}') : okAnswer(req, res)));
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 1 });
  const completion = await client.chat.completions.create({ model: 'team', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(completion.model, 'vendor-model', 'the retry was served');
  t.equal(upstream.requests.length, 2, 'the 503, then the retry');
});

// A 429 that gives no retry-after but says when the exhausted limit resets: the key cools down
// until then, not for credential_cooldown_seconds (a per-second limit shelved for minutes, a daily one asked again each minute).
/** A time as Zhipu dates a reset: `2026-09-09 05:38:28`, Beijing time. */
const beijingTime = (ms: number) => new Date(ms + 8 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');

const RESET_HINTS: { vendor: string; channel: string; headers: () => Record<string, string>; body: string | (() => string); seconds: number }[] = [
  {
    vendor: 'OpenAI, requests exhausted, a Go duration',
    channel: 'ch02',
    headers: () => ({ 'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1m30s', 'x-ratelimit-remaining-tokens': '29000', 'x-ratelimit-reset-tokens': '6m0s' }),
    body: JSON.stringify({ error: { message: 'Rate limit reached for gpt-4o in organization org-1 on requests per min (RPM): Limit 500, Used 500, Requested 1.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }),
    seconds: 90,
  },
  {
    vendor: 'OpenAI, tokens exhausted',
    channel: 'ch02',
    headers: () => ({ 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-requests': '120ms', 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '7.5s' }),
    body: JSON.stringify({ error: { message: 'Rate limit reached for gpt-4o in organization org-1 on tokens per min (TPM): Limit 30000, Used 30000, Requested 20.', type: 'tokens', param: null, code: 'rate_limit_exceeded' } }),
    seconds: 8,
  },
  {
    vendor: "OpenRouter's free daily limit, an epoch in ms",
    channel: 'ch29',
    headers: () => ({ 'x-ratelimit-limit': '50', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Date.now() + 7_200_000) }),
    body: JSON.stringify({ error: { message: 'Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day', code: 429 } }),
    seconds: 7200,
  },
  {
    vendor: "OpenRouter's limit given only in the body's metadata.headers",
    channel: 'ch29',
    headers: () => ({}),
    body: () => JSON.stringify({ error: { message: 'Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day', code: 429, metadata: { headers: { 'X-RateLimit-Limit': '50', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(Date.now() + 7_200_000) } } } }),
    seconds: 7200,
  },
  {
    vendor: "Gemini's OpenAI-compatible endpoint, RetryInfo in Google's shape as an array",
    channel: 'ch02',
    headers: () => ({}),
    body: JSON.stringify([{ error: { code: 429, message: 'You exceeded your current quota, please check your plan and billing details.', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '20s' }] } }]),
    seconds: 20,
  },
  {
    vendor: "Zhipu's 5-hour usage limit, its reset dated in Beijing time",
    channel: 'ch02',
    headers: () => ({}),
    body: () => JSON.stringify({ error: { code: '1308', message: `Usage limit reached for 5 hour. Your limit will reset at ${beijingTime(Date.now() + 10_800_000)}` } }),
    seconds: 10_800,
  },
  {
    vendor: "Zhipu's weekly limit, further than a day: the most a cooldown is",
    channel: 'ch02',
    headers: () => ({}),
    body: () => JSON.stringify({ error: { code: '1310', message: `Weekly/Monthly Limit Exhausted. Your limit will reset at ${beijingTime(Date.now() + 3 * 86_400_000)}` } }),
    seconds: 86_400,
  },
  {
    vendor: 'Anthropic without retry-after, an RFC 3339 reset',
    channel: 'ch14',
    headers: () => ({ 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': new Date(Date.now() + 40_000).toISOString(), 'anthropic-ratelimit-tokens-remaining': '9000' }),
    body: JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your per-minute rate limit' } }),
    seconds: 40,
  },
];

for (const c of RESET_HINTS) {
  t.test(`${c.vendor}: a 429 cools the key down until the limit resets, and the client is told so`, async (t) => {
    const { listed, chat, message } = await setup(t, { channel: c.channel, secrets: ['sk-only'], settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (_req, res) => send(res, 429, typeof c.body === 'string' ? c.body : c.body(), c.headers()));
    const sentAt = Date.now();
    const res = await (c.channel === 'ch14' ? message() : chat());
    t.equal(res.status, 429, 'the upstream answer, as sent');
    const state = (await listed())('sk-only');
    const until = Date.parse(state.cooldown_until ?? '');
    t.equal(state.state, 'cooldown');
    t.ok(until >= sentAt + c.seconds * 1000 - 1000 && until <= Date.now() + c.seconds * 1000, `for about ${c.seconds} s: until ${state.cooldown_until}`);
    t.ok(Math.abs(Number(res.headers.get('retry-after')) - c.seconds) <= 1, `retry-after ${res.headers.get('retry-after')}: the pool's hint, the time to the reset`);
  });
}

t.test("a 429's retry-after wins over its reset headers; a limit not exhausted gives no hint", async (t) => {
  const { listed, chat } = await setup(t, { secrets: ['sk-hinted', 'sk-left'], settings: { credential_cooldown_seconds: 300, server_error_cooldown_seconds: 7 } }, (req, res) =>
    secretOf(req) === 'sk-hinted'
      ? send(res, 429, '{"error":{"message":"slow down","code":"rate_limit_exceeded"}}', { 'retry-after': '20', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '6m0s' })
      : send(res, 429, '{"error":{"message":"slow down","code":"rate_limit_exceeded"}}', { 'x-ratelimit-remaining-requests': '3', 'x-ratelimit-reset-requests': '2s', 'x-ratelimit-remaining-tokens': 'x', 'x-ratelimit-reset-tokens': '5s' }),
  );
  const sentAt = Date.now();
  t.equal((await chat()).status, 429);
  coolsFor(t, (await listed())('sk-hinted'), sentAt, 20);
  coolsFor(t, (await listed())('sk-left'), sentAt, 300);
});
