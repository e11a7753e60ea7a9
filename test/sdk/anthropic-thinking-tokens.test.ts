import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { usd } from '../dataplane/helpers/priced-request.ts';
import { jsonBody, logOf, message, rig, writeJson, writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// Extended thinking through the messages route: Anthropic reports the thinking a message
// spent as `usage.output_tokens_details.thinking_tokens`, a part of `output_tokens` (the
// billed total, which already holds it), as the anthropic SDK's Usage declares. The record's
// reasoning_tokens is that part; the output is not raised by it, nor priced twice.

const ROUTE = { channel: 'ch14', protocols: ['x-messages'], external: 'team-msg', upstreamModel: 'vendor-msg-1' };
const PRICE = { input_per_mtok: 3, output_per_mtok: 15 };
const ASK = { max_tokens: 4096, thinking: { type: 'enabled' as const, budget_tokens: 2048 }, messages: [{ role: 'user' as const, content: 'why?' }] };

const INPUT = 40;
const OUTPUT = 2820;
const THINKING = 1240;

function thinkingMessage(model: string) {
  const base = message(model, 'Because.', { input_tokens: INPUT, output_tokens: OUTPUT });
  return {
    ...base,
    content: [{ type: 'thinking', thinking: 'Let me see.', signature: 'sig_1' }, ...base.content],
    usage: { ...base.usage, output_tokens_details: { thinking_tokens: THINKING } },
  };
}

function thinkingEvents(model: string): SseFrame[] {
  const usage = { input_tokens: INPUT, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' };
  const bodies = [
    { type: 'message_start', message: { id: 'msg_up_02', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } },
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me see.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig_1' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Because.' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: OUTPUT, output_tokens_details: { thinking_tokens: THINKING } } },
    { type: 'message_stop' },
  ];
  return bodies.map((data) => ({ event: data.type, data }));
}

const EXPECTED_USAGE = { input_tokens: INPUT, output_tokens: OUTPUT, cached_tokens: 0, reasoning_tokens: THINKING };
const EXPECTED_COST = usd([INPUT, PRICE.input_per_mtok], [OUTPUT, PRICE.output_per_mtok]);

t.test('a message with thinking: the record reads thinking_tokens as reasoning, within the output', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeJson(res, 200, thinkingMessage(String(jsonBody(req)['model']))));
  await r.gw.store.modelPrices.put('vendor-msg-1', PRICE, 'manual');
  const { data, response } = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.create({ model: 'team-msg', ...ASK }).withResponse();
  t.equal(data.usage.output_tokens_details?.thinking_tokens, THINKING, 'the client gets the breakdown as sent');

  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.same(log?.usage, EXPECTED_USAGE);
  t.equal(log?.cost, EXPECTED_COST, 'the output priced once: thinking is inside it');
});

t.test('a streamed message with thinking, through messages.stream(): message_delta carries the breakdown', async (t) => {
  const r = await rig(t, ROUTE, (req, res) => writeSse(res, thinkingEvents(String(jsonBody(req)['model']))));
  await r.gw.store.modelPrices.put('vendor-msg-1', PRICE, 'manual');
  const stream = new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url, maxRetries: 0 }).messages.stream({ model: 'team-msg', ...ASK });
  const final = await stream.finalMessage();
  t.same(final.content.map((block) => block.type), ['thinking', 'text']);
  t.equal(final.usage.output_tokens, OUTPUT);

  const { response } = await stream.withResponse();
  const log = await logOf(r.gw, response.headers.get('x-switchyard-request-id'));
  t.same(log?.usage, EXPECTED_USAGE);
  t.equal(log?.cost, EXPECTED_COST);
});
