import t from 'tap';
import { CHANNEL_IDS, OPERATIONS } from '../../src/generated/index.ts';
import { resolve, type ResolveInput } from '../../src/engine/index.ts';

// Expectations read from the specification's notes 1-14, not from the manifests.
const EXTRA_PROTOCOLS: { note: number; protocol: string; operations: string[]; channels: string[] }[] = [
  { note: 4, protocol: 'x-responses', operations: ['alpha-search'], channels: ['ch31', 'ch32', 'ch33'] },
  { note: 5, protocol: 'rerank', operations: ['rerank'], channels: ['ch08', 'ch35', 'ch21', 'ch32', 'ch31'] },
  { note: 6, protocol: 'x-embeddings', operations: ['embed-content', 'batch-embed-contents'], channels: ['ch15', 'ch32', 'ch31'] },
  { note: 7, protocol: 'decisions', operations: ['decisions'], channels: ['ch01', 'ch25'] },
  { note: 7, protocol: 'x-live', operations: ['live'], channels: ['ch10'] },
  {
    note: 8,
    protocol: 'x-suite',
    operations: ['ocr', 'fim-completions', 'audio-transcriptions', 'audio-speech', 'moderations', 'chat-moderations', 'classifications', 'voices-list', 'audio-transcriptions-realtime'],
    channels: ['ch03'],
  },
];

for (const extra of EXTRA_PROTOCOLS) {
  t.test(`note ${extra.note}: ${extra.protocol} ${extra.operations.join(', ')} only on ${extra.channels.join(', ')}`, async (t) => {
    for (const channel of CHANNEL_IDS) {
      for (const operation of extra.operations) {
        const r = resolve({ protocol: extra.protocol, operation, channel, model: 'm' });
        if (extra.channels.includes(channel)) t.match(r, { ok: true, declared: 'N', effective: 'native' }, `${channel} ${operation}`);
        else t.match(r, { ok: false }, `${channel} ${operation} refused`);
      }
    }
  });
}

const img = (channel: string, operation: string, features: ResolveInput['features'] = {}) => resolve({ protocol: 'x-images', operation, channel, model: 'm', features });

t.test('note 1: IMG C is single-image, non-streaming, base64 generation only', async (t) => {
  for (const channel of ['ch12', 'ch15']) {
    t.match(img(channel, 'images-generations'), { ok: true, declared: 'C', restrictions: ['single_image', 'non_streaming', 'base64_output', 'generation_only'] });
    t.match(img(channel, 'images-generations', { output_format: 'base64', image_count: 1, stream: false }), { ok: true });
    for (const [what, features] of [['streaming', { stream: true }], ['two images', { image_count: 2 }], ['url output', { output_format: 'url' }]] as const) {
      t.match(img(channel, 'images-generations', features), { ok: false, reason_code: 'restricted_by_channel_note', note: 1 }, `${channel} refuses ${what}`);
    }
    t.match(img(channel, 'images-edits'), { ok: false, reason_code: 'restricted_by_channel_note', note: 1 }, `${channel} refuses editing`);
  }
  t.test('IMG N channels have none of these limits', async (t) => {
    for (const channel of ['ch09', 'ch10', 'ch31']) {
      t.match(img(channel, 'images-generations', { stream: true, image_count: 4, output_format: 'url' }), { ok: true, declared: 'N', restrictions: [] });
      t.match(img(channel, 'images-edits'), { ok: true, declared: 'N' });
    }
  });
});

t.test('note 3: N* subsets of the responses resource APIs', async (t) => {
  const subs: Record<string, string> = {
    'responses-retrieve': 'retrieval',
    'responses-delete': 'deletion',
    'responses-cancel': 'cancellation',
    'responses-input-items': 'input_items',
    'responses-compact': 'compaction',
    'responses-namespace': 'namespace_passthrough',
  };
  const allowed: Record<string, string[]> = { ch32: ['compaction', 'namespace_passthrough'], ch33: ['compaction', 'namespace_passthrough'], ch34: ['compaction'] };
  for (const [channel, keep] of Object.entries(allowed)) {
    for (const [operation, sub] of Object.entries(subs)) {
      const r = resolve({ protocol: 'x-responses', operation, channel });
      if (keep.includes(sub)) t.match(r, { ok: true, declared: 'N*' }, `${channel} ${sub}`);
      else t.match(r, { ok: false, reason_code: 'operation_outside_native_subset', note: 3 }, `${channel} refuses ${sub}`);
    }
    t.match(resolve({ protocol: 'x-responses', operation: 'responses-input-tokens', channel, model: 'm' }), { ok: false, reason_code: 'restricted_by_channel_note', note: 3 }, `${channel} refuses responses input tokens by note 3`);
  }
  for (const operation of [...Object.keys(subs), 'responses-input-tokens']) {
    t.match(resolve({ protocol: 'x-responses', operation, channel: 'ch31', model: 'm' }), { ok: true, declared: 'N' }, `ch31 supports ${operation}`);
  }
});

t.test('note 5: rerank is text-only and never streams', async (t) => {
  for (const channel of ['ch08', 'ch35', 'ch21', 'ch32', 'ch31']) {
    t.match(resolve({ protocol: 'rerank', operation: 'rerank', channel, model: 'm', features: { input_kind: 'text' } }), { ok: true, declared: 'N' });
    t.match(resolve({ protocol: 'rerank', operation: 'rerank', channel, model: 'm', features: { stream: true } }), { ok: false, note: 5 });
    t.match(resolve({ protocol: 'rerank', operation: 'rerank', channel, model: 'm', features: { input_kind: 'other' } }), { ok: false, note: 5 });
  }
});

t.test('note 6: ch15 chat-style embeddings convert text and refuse token ids', async (t) => {
  t.match(resolve({ protocol: 'x-chat-embeddings', operation: 'embeddings', channel: 'ch15', model: 'm', features: { input_kind: 'text' } }), { ok: true, declared: 'C', effective: 'converted', restrictions: ['text_input_only'] });
  t.match(resolve({ protocol: 'x-chat-embeddings', operation: 'embeddings', channel: 'ch15', model: 'm', features: { input_kind: 'token_ids' } }), { ok: false, reason_code: 'restricted_by_channel_note', note: 6 });
  t.match(resolve({ protocol: 'x-chat-embeddings', operation: 'embeddings', channel: 'ch31', model: 'm', features: { input_kind: 'token_ids' } }), { ok: true, declared: 'N' }, 'native embeddings take token ids');
});

t.test('note 7: ch01 and ch08 are not conversation channels', async (t) => {
  const core = [
    ['x-completions', 'chat-completions'],
    ['x-responses', 'responses-create'],
    ['x-messages', 'messages-create'],
    ['x-generate', 'generate-content'],
  ];
  for (const channel of ['ch01', 'ch08']) {
    for (const [protocol, operation] of core) {
      t.match(resolve({ protocol: protocol!, operation: operation!, channel, model: 'm' }), { ok: false, reason_code: 'not_a_conversation_channel', note: 7 });
    }
  }
});

t.test('note 9: ch35 answers carry the relay dependency', async (t) => {
  t.match(resolve({ protocol: 'x-completions', operation: 'chat-completions', channel: 'ch35', model: 'm' }), { ok: true, restrictions: ['capability_depends_on_relay'], notes: [9] });
  t.match(resolve({ protocol: 'x-messages', operation: 'messages-create', channel: 'ch35', model: 'm' }), { ok: true, declared: 'C', restrictions: ['capability_depends_on_relay'] });
});

t.test('note 10: ch18 picks native or converted generate routing by model', async (t) => {
  const gg = (model?: string) => resolve({ protocol: 'x-generate', operation: 'generate-content', channel: 'ch18', ...(model ? { model } : {}) });
  t.match(gg('gemini-2.0-flash'), { ok: true, declared: 'N/C', effective: 'native' });
  t.match(gg('publishers/google/models/gemini-1.5-pro'), { ok: true, effective: 'native' });
  t.match(gg('claude-3-7-sonnet'), { ok: true, declared: 'N/C', effective: 'converted', wire: 'messages' });
  t.match(gg(), { ok: false, reason_code: 'model_required', note: 10 });
  t.match(resolve({ protocol: 'x-completions', operation: 'chat-completions', channel: 'ch18', model: 'gemini-2.0-flash' }), { ok: true, declared: 'C', wire: 'generate' }, 'converted routes use the generate dialect for generate-family models');
  t.match(resolve({ protocol: 'x-completions', operation: 'chat-completions', channel: 'ch18', model: 'claude-3-7-sonnet' }), { ok: true, declared: 'C', wire: 'messages' }, 'and the messages dialect for others');
});

t.test('note 11: ch29 and ch30 create responses statelessly; no generate style or resource APIs', async (t) => {
  for (const channel of ['ch29', 'ch30']) {
    t.match(resolve({ protocol: 'x-responses', operation: 'responses-create', channel, model: 'm' }), { ok: true, declared: 'N', restrictions: ['stateless'] });
    t.match(resolve({ protocol: 'x-responses', operation: 'responses-create', channel, model: 'm', features: { previous_response: true } }), { ok: false, note: 11 });
    t.match(resolve({ protocol: 'x-generate', operation: 'stream-generate-content', channel, model: 'm' }), { ok: false, reason_code: 'restricted_by_channel_note', note: 11 });
    t.match(resolve({ protocol: 'x-responses', operation: 'responses-retrieve', channel }), { ok: false, reason_code: 'restricted_by_channel_note', note: 11 });
  }
});

t.test('note 11: every generate-style and every responses resource endpoint is refused on ch29 and ch30 with the note', async (t) => {
  // Generate style: the x-generate and x-embeddings protocols (decisions.md §2). Responses
  // resources: the sub-operations note 2 lists.
  const resources = ['retrieval', 'deletion', 'cancellation', 'input_items', 'compaction', 'namespace_passthrough'];
  const ops = Object.values(OPERATIONS);
  const generate = ops.filter((op) => op.protocol === 'x-generate' || op.protocol === 'x-embeddings');
  const responses = ops.filter((op) => op.protocol === 'x-responses' && resources.includes(op.sub_operation ?? ''));
  // As §2 lists them: generateContent, streamGenerateContent, countTokens, embedContent, batchEmbedContents.
  t.equal(generate.length, 5, 'the generate-style endpoints');
  t.same(responses.map((op) => op.sub_operation).sort(), [...resources].sort(), 'one endpoint per resource sub-operation');
  for (const channel of ['ch29', 'ch30']) {
    for (const op of [...generate, ...responses]) {
      const r = resolve({ protocol: op.protocol, operation: op.id, channel, model: 'm' });
      t.match(r, { ok: false, reason_code: 'restricted_by_channel_note', note: 11, detail: /\(note 11\)/ }, `${channel} ${op.id}`);
    }
  }
});

t.test('a refusal a note caused names the note in its detail (the client\'s error message)', async (t) => {
  t.match(resolve({ protocol: 'x-responses', operation: 'responses-retrieve', channel: 'ch32' }), { reason_code: 'operation_outside_native_subset', detail: /\(note 3\)/ });
  t.match(resolve({ protocol: 'x-completions', operation: 'chat-completions', channel: 'ch01', model: 'm' }), { reason_code: 'not_a_conversation_channel', detail: /\(note 7\)/ });
  t.match(resolve({ protocol: 'x-images', operation: 'images-edits', channel: 'ch15', model: 'm' }), { reason_code: 'restricted_by_channel_note', detail: /\(note 1\)/ });
  t.match(resolve({ protocol: 'x-generate', operation: 'generate-content', channel: 'ch18' }), { reason_code: 'model_required', detail: /\(note 10\)/ });
  // And every other one, across the whole matrix.
  let noted = 0;
  for (const channel of CHANNEL_IDS) {
    for (const op of Object.values(OPERATIONS)) {
      const r = resolve({ protocol: op.protocol, operation: op.id, channel });
      if (r.ok || r.note === undefined) continue;
      noted++;
      if (!r.detail.includes(`(note ${r.note})`)) t.fail(`${channel} ${op.id}: ${r.reason_code} detail "${r.detail}" does not name note ${r.note}`);
    }
  }
  t.ok(noted > 0, `${noted} refusals checked`);
});

t.test('unknown ids are refused, never thrown', async (t) => {
  t.match(resolve({ protocol: 'nope', operation: 'chat-completions', channel: 'ch02' }), { ok: false, reason_code: 'unknown_protocol' });
  t.match(resolve({ protocol: 'x-completions', operation: 'messages-create', channel: 'ch02' }), { ok: false, reason_code: 'unknown_operation' });
  t.match(resolve({ protocol: 'x-completions', operation: 'chat-completions', channel: 'ch99' }), { ok: false, reason_code: 'unknown_channel' });
  t.match(resolve({ protocol: 'x-completions', operation: 'toString', channel: 'ch02' }), { ok: false, reason_code: 'unknown_operation' });
});
