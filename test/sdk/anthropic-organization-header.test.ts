import t, { type Test } from 'tap';
import Anthropic, { RateLimitError } from '@anthropic-ai/sdk';
import { jsonBody, message, messageEvents, rig, writeJson, writeSse } from './helpers/vendor-wire.ts';

// Anthropic names the account and workspace of the key an answer was made with in
// `anthropic-organization-id` and `anthropic-workspace-id` (the SDK's `workspaceID`): the
// operator's, which are not the client's business (as OpenAI's `openai-organization` is not).
// Other vendor headers still come back.

const ACCOUNT = { 'anthropic-organization-id': 'org-operator-uuid', 'anthropic-workspace-id': 'wrkspc_operator' };
const KEPT = { 'anthropic-ratelimit-requests-limit': '50' };
const MESSAGES = { channel: 'ch14', protocols: ['x-messages'], external: 'team-msg', upstreamModel: 'vendor-msg-1' };
const ASK = { model: 'team-msg', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }] };

function withoutAccount(t: Test, headers: Headers | undefined): void {
  t.equal(headers?.get('anthropic-organization-id'), null, "the operator's organization id is not passed back");
  t.equal(headers?.get('anthropic-workspace-id'), null, "nor the operator's workspace id");
  t.equal(headers?.get('anthropic-ratelimit-requests-limit'), '50', 'other vendor headers are');
}

t.test('a message: the upstream\'s account headers do not reach the client', async (t) => {
  const r = await rig(t, MESSAGES, (req, res) => writeJson(res, 200, message(String(jsonBody(req)['model']), 'Bonjour.'), { ...ACCOUNT, ...KEPT }));
  const { data, response } = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create(ASK).withResponse();
  t.equal(data.content[0]?.type === 'text' ? data.content[0].text : undefined, 'Bonjour.');
  withoutAccount(t, response.headers);
});

t.test('a streamed message: the upstream\'s account headers do not reach the client', async (t) => {
  const r = await rig(t, MESSAGES, (req, res) => writeSse(res, messageEvents(String(jsonBody(req)['model']), ['Bon', 'jour.']), { headers: { ...ACCOUNT, ...KEPT } }));
  const { data: stream, response } = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create({ ...ASK, stream: true }).withResponse();
  let text = '';
  for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
  t.equal(text, 'Bonjour.');
  withoutAccount(t, response.headers);
});

t.test('an upstream error answer: its account headers do not reach the client', async (t) => {
  const r = await rig(t, MESSAGES, (_req, res) => writeJson(res, 429, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }, { 'retry-after': '600', ...ACCOUNT, ...KEPT }));
  const err = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create(ASK).catch((e: unknown) => e);
  t.type(err, RateLimitError);
  t.equal((err as RateLimitError).workspaceID, null, 'the SDK error names no workspace');
  withoutAccount(t, (err as RateLimitError).headers);
});
