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

// What routing reads of a plan; `request` is the first request of those that share the plan.
const routing = (candidates: readonly { group: GroupRecord; upstream_model: string | null; resolution: unknown; included: boolean; excluded_because?: string }[]) =>
  candidates.map((c) => ({ group: c.group.id, upstream_model: c.upstream_model, resolution: c.resolution, included: c.included, excluded_because: c.excluded_because }));

t.test('n far above or below the rules\' threshold routes as planned afresh, and shares a plan with n the rules cannot tell apart', async (t) => {
  // ch12 converts IMG with a rule `image_count > 1` (note 1); ch02 has no such rule.
  const groups = [group(1, 'ch12', ['img'], { priority: 1 }), group(2, 'ch02', ['img'])];
  const snapshot = byModel(groups);
  const plans = new RoutePlans();
  const k = key({ protocols: ['x-images'] });
  const ask = (n: number) => plans.plan(snapshot, groups, k, 'x-images', 'images-generations', 'img', { stream: false, image_count: n });
  const fresh = (n: number) => planCandidates({ protocol: 'x-images', operation: 'images-generations', model: 'img', key: k, groups: snapshot.get('img')!, features: { stream: false, image_count: n } });
  for (const n of [1e12, 2, 1, 0, -1e12, 0.5, 1.5, 1 + 1e-9, 1 - 1e-9, 1e12, -3, 1]) {
    t.same(routing(ask(n).candidates), routing(fresh(n)), `n = ${n} as without the cache`);
  }
  t.equal(fresh(1e12)[0]!.resolution.ok, false, 'ch12 refuses many images');
  t.equal(fresh(1)[0]!.resolution.ok, true, 'and takes one');
  t.equal(ask(3), ask(1e12), 'above the threshold, one plan');
  t.equal(ask(0), ask(-7), 'below it, one plan');
  t.not(ask(1), ask(2), 'on either side of it, two');
  t.not(ask(1), ask(0.5), 'at it and below it, two');
});

t.test('many distinct n keep as many plans as the rules tell apart', async (t) => {
  const groups = [group(1, 'ch12', ['img'])];
  const snapshot = byModel(groups);
  const plans = new RoutePlans();
  const k = key({ protocols: ['x-images'] });
  for (let i = 0; i < 3000; i++) plans.plan(snapshot, groups, k, 'x-images', 'images-generations', 'img', { image_count: (i - 1000) / 7 });
  t.equal(plans.plansFor(k), 3, 'below, at and above the one threshold');
});

t.test('a key asking for ever new models keeps a bounded number of plans, each still right', async (t) => {
  const groups = [group(1, 'ch02', ['m'])];
  const snapshot = byModel(groups);
  const plans = new RoutePlans();
  const k = key();
  let most = 0;
  for (let i = 0; i < 3000; i++) {
    plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', `unknown-${i}`, {});
    plans.plan(snapshot, groups, k, 'x-responses', 'responses-create', `unknown-${i}`, {});
    most = Math.max(most, plans.plansFor(k));
  }
  t.ok(most <= 1024, `at most 1024 plans (${most})`);
  t.ok(plans.plansFor(k) > 0, 'the latest ones are kept');
  const plan = plans.plan(snapshot, groups, k, 'x-completions', 'chat-completions', 'm', {});
  t.same(routing(plan.candidates), routing(planCandidates({ protocol: 'x-completions', operation: 'chat-completions', model: 'm', key: k, groups, features: {} })), 'a known model is planned as before');
  t.same(plan.included.map((c) => c.group.id), [1]);
});
