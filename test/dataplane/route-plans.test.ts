import t from 'tap';
import { RoutePlans } from '../../src/dataplane/route-plans.ts';
import { planCandidates } from '../../src/dataplane/plan-candidates.ts';
import type { AccessKeyRecord, GroupRecord } from '../../src/store/records.ts';

const T = '2026-01-01T00:00:00.000Z';
const group = (id: number, channel: string, models: string[], over: Partial<GroupRecord> = {}): GroupRecord => ({
  id, name: `g${id}`, description: '', channel, base_url: 'http://up.test', proxy_url: null, priority: 0, weight: 1, enabled: true,
  models: models.map((m) => ({ external: m, upstream: `${m}-up` })), created_at: T, updated_at: T, ...over,
});
const key = (over: Partial<AccessKeyRecord> = {}): AccessKeyRecord => ({
  id: 1, name: 'k', masked: 'sk-…', protocols: ['x-completions', 'x-responses'], groups: null, models: null, record_request_body: false,
  quota: null, expires_at: null, enabled: true, created_at: T, updated_at: T, rotated_at: null, ...over,
});
const byModel = (groups: GroupRecord[]) => {
  const map = new Map<string, GroupRecord[]>();
  for (const g of groups) for (const m of g.models) map.set(m.external, [...(map.get(m.external) ?? []), g]);
  return map;
};

t.test('a plan is what planCandidates gives, worked out once per key, operation, model and features', async (t) => {
  const groups = [group(1, 'ch02', ['m']), group(2, 'ch02', ['m'], { enabled: false }), group(3, 'ch02', ['other'])];
  const snapshot = byModel(groups);
  const plans = new RoutePlans();
  const k = key();
  const first = plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', 'm', { stream: false });
  t.same(first.candidates, planCandidates({ protocol: 'x-completions', operation: 'chat-completions', model: 'm', key: k, groups: snapshot.get('m')!, features: { stream: false } }));
  t.same(first.included.map((c) => c.group.id), [1], 'only the enabled group is included');
  t.equal(plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', 'm', { stream: false }), first, 'the same request gets the same plan');
  t.not(plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', 'm', { stream: true }), first, 'other features, another plan');
  t.not(plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', 'other', { stream: false }), first, 'another model, another plan');
  t.not(plans.plan(snapshot, groups, key(), 'x-completions', 'chat-completions', 'm', { stream: false }), first, 'another key record, another plan');
  t.not(plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', 'm', { stream: false, image_count: 2 }), first, 'a feature beyond the flags counts too');
});

t.test('a new snapshot starts over, so a changed configuration is planned anew', async (t) => {
  const plans = new RoutePlans();
  const k = key();
  const before = [group(1, 'ch02', ['m'])];
  t.same(plans.plan(byModel(before), before, k, 'x-completions', 'chat-completions', 'm', {}).included.length, 1);
  const after = [group(1, 'ch02', ['m'], { enabled: false })];
  t.same(plans.plan(byModel(after), after, k, 'x-completions', 'chat-completions', 'm', {}).included.length, 0, 'the disabled group is seen at once');
});

t.test('a key that is not allowed a group gets no candidate from it', async (t) => {
  const groups = [group(1, 'ch02', ['m']), group(2, 'ch02', ['m'])];
  const plan = new RoutePlans().plan(byModel(groups), groups, key({ groups: [2] }), 'x-completions', 'chat-completions', 'm', {});
  t.same(plan.included.map((c) => c.group.id), [2]);
  t.equal(plan.candidates.find((c) => c.group.id === 1)?.excluded_because, 'group_not_visible');
});
