import t from 'tap';
import { CHANNELS, OPERATIONS, PROTOCOLS } from '../../src/generated/index.ts';
import { templateVerb } from '../../src/handlers/compile-route-table.ts';
import { anyIncluded, planCandidates, type RouteMemo } from '../../src/dataplane/plan-candidates.ts';
import { modelBody, modelListBody } from '../../src/dataplane/serve-model-list.ts';
import type { AccessKeyRecord, GroupRecord } from '../../src/store/records.ts';

// A generate-style entry's supportedGenerationMethods name exactly the methods routing would
// accept for that model and key (planCandidates, as a call weighs it), over a configuration that
// varies what decides it: every channel, upstream names a model rule sends native or converted
// (ch18), Groups disabled, without a base URL, hidden from the key, a Group mapping a name twice.

const UPSTREAMS = ['gemini-1.5-pro', 'publishers/google/models/gemini-x', 'claude-3-haiku', 'text-embedding-004'];
const channels = Object.keys(CHANNELS);

const groups: GroupRecord[] = [];
const group = (channel: string, models: { external: string; upstream: string }[], extra: Partial<GroupRecord> = {}): void => {
  const id = groups.length + 1;
  groups.push({ id, name: `g${id}`, description: '', channel, base_url: 'http://127.0.0.1:9', proxy_url: null, priority: id % 3, weight: 1 + (id % 2), enabled: true, models, created_at: '2025-01-01T00:00:00Z', updated_at: '', ...extra });
};
// One model per channel x upstream, served by that channel's Group alone.
for (const channel of channels) group(channel, UPSTREAMS.map((upstream, i) => ({ external: `${channel}-u${i}`, upstream })));
// Models shared by several channels, where one Group's methods add to another's.
channels.forEach((channel, i) => group(channel, [{ external: `mix-${i % 5}`, upstream: UPSTREAMS[i % UPSTREAMS.length]! }, { external: 'everywhere', upstream: UPSTREAMS[i % 2]! }]));
// Groups that would serve a method but are not candidates: disabled, no base URL, hidden from the keys that name Groups.
group('ch15', [{ external: 'off', upstream: 'gemini-1.5-pro' }, { external: 'mix-0', upstream: 'gemini-1.5-pro' }], { enabled: false });
group('ch15', [{ external: 'no-url', upstream: 'gemini-1.5-pro' }], { base_url: null });
group('ch15', [{ external: 'hidden', upstream: 'gemini-1.5-pro' }]);
const hiddenGroup = groups.length;
// The first mapping of a name is the one routed.
group('ch18', [{ external: 'twice', upstream: 'claude-3-haiku' }, { external: 'twice', upstream: 'gemini-1.5-pro' }]);
group('ch18', [{ external: 'twice-other', upstream: 'gemini-1.5-pro' }, { external: 'twice-other', upstream: 'claude-3-haiku' }]);

const groupsByModel = new Map<string, GroupRecord[]>();
for (const g of groups) for (const m of g.models) groupsByModel.set(m.external, [...new Set([...(groupsByModel.get(m.external) ?? []), g])]);

const keyWith = (protocols: string[], extra: Partial<AccessKeyRecord> = {}): AccessKeyRecord => ({
  id: 1, name: 'k', masked: '', protocols, groups: null, models: null, record_request_body: false, quota: null, expires_at: null, enabled: true, created_at: '', updated_at: '', rotated_at: null, ...extra,
});
const allProtocols = [...new Set(Object.values(OPERATIONS).map((op) => op.protocol))];
const keys: [string, AccessKeyRecord][] = [
  ['every protocol', keyWith(allProtocols)],
  ['generate only', keyWith(['x-generate'])],
  ['embeddings only', keyWith(['x-embeddings'])],
  ['some Groups', keyWith(allProtocols, { groups: groups.filter((g) => g.id !== hiddenGroup && g.id % 4 !== 0).map((g) => g.id) })],
  ['some models', keyWith(allProtocols, { models: ['everywhere', 'mix-1', 'twice', 'hidden', 'ch18-u0', 'ch18-u2'] })],
];

// In manifest order, as the entries name them.
const generateOps = Object.values(PROTOCOLS).flatMap((protocol) => protocol.operations).map((id) => OPERATIONS[id]).filter((op) => op.error_style === 'generate' && op.model === 'path' && op.stream !== 'always' && templateVerb(op.path));

/** What routing accepts: each method the key may call that planCandidates includes a Group for. */
function routedMethods(key: AccessKeyRecord, model: string): string[] {
  return generateOps
    .filter((op) => key.protocols.includes(op.protocol) && planCandidates({ protocol: op.protocol, operation: op.id, model, key, groups: groupsByModel.get(model) ?? [] }).some((c) => c.included))
    .map((op) => templateVerb(op.path)!);
}

t.test('every listed model names the methods routing accepts for it, no more and no fewer', async (t) => {
  let partial = 0;
  for (const [label, key] of keys) {
    const listed = modelListBody('generate', key, { groups, groupsByModel }, new URLSearchParams({ pageSize: '1000' })) as { models: { baseModelId: string; supportedGenerationMethods: string[] }[] };
    t.ok(listed.models.length > 0, `${label}: models are listed`);
    for (const entry of listed.models) {
      const expected = routedMethods(key, entry.baseModelId);
      t.same(entry.supportedGenerationMethods, expected, `${label}: ${entry.baseModelId}`);
      t.same((modelBody('generate', entry.baseModelId, key, { groups, groupsByModel }) as typeof entry).supportedGenerationMethods, expected, `${label}: ${entry.baseModelId}, got alone`);
      if (expected.length > 0 && expected.length < generateOps.filter((op) => key.protocols.includes(op.protocol)).length) partial++;
    }
  }
  t.ok(partial > 0, 'some models are served for only some of the methods the key may call');
});

t.test('the configuration exercises what decides inclusion', async (t) => {
  const key = keys[0]![1];
  const methods = (model: string) => (modelBody('generate', model, key, { groups, groupsByModel }) as { supportedGenerationMethods: string[] }).supportedGenerationMethods;
  t.same(methods('ch18-u0'), ['generateContent'], 'ch18 routes a gemini name natively');
  t.same(methods('ch18-u2'), [], 'ch18 would convert another name, which is not carried');
  t.same(methods('twice'), [], "the first mapping's upstream decides");
  t.same(methods('twice-other'), ['generateContent'], "the first mapping's upstream decides");
  t.same(methods('no-url'), [], 'a Group without a base URL routes nothing');
  t.equal(modelBody('generate', 'off', key, { groups, groupsByModel }), undefined, 'a disabled Group lists nothing');
  t.equal(modelBody('generate', 'hidden', keys[3]![1], { groups, groupsByModel }), undefined, 'a hidden Group lists nothing');
});

t.test('anyIncluded answers as planCandidates does, over Groups not filtered for the key first', async (t) => {
  const memo: RouteMemo = new Map();
  // Every operation, every model (and none, over every Group, for the operations without one).
  const requests = [...groupsByModel, [undefined, groups] as const];
  let mismatches = 0;
  let included = 0;
  for (const [, key] of keys) {
    for (const [model, serving] of requests) {
      for (const op of Object.values(OPERATIONS)) {
        const input = { protocol: op.protocol, operation: op.id, model, key, groups: serving };
        const expected = planCandidates(input).some((c) => c.included);
        if (anyIncluded(input, memo) !== expected) mismatches++;
        if (expected) included++;
      }
    }
  }
  t.equal(mismatches, 0);
  t.ok(included > 0, 'some requests have an included Group');
});
