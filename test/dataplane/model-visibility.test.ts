import t from 'tap';
import { groupsServingTo, modelVisibleTo, visibleModelNames } from '../../src/management/visibility.ts';
import { modelBody, modelListBody, type ModelCatalog } from '../../src/dataplane/serve-model-list.ts';
import type { AccessKeyRecord, GroupRecord } from '../../src/store/records.ts';

// Model visibility (note 12) looked up in Sets and, for one model, only among the Groups serving
// it: the answers must be those of the plain definition (a key's lists searched as arrays, the
// whole visible list built to find one name), on random configurations.

function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const NAMES = Array.from({ length: 30 }, (_, i) => `m-${i}`);

function configuration(next: () => number): { groups: GroupRecord[]; key: AccessKeyRecord } {
  const pick = <T>(items: readonly T[], share: number) => items.filter(() => next() < share);
  const groups = Array.from({ length: 1 + Math.floor(next() * 8) }, (_, i): GroupRecord => ({
    id: i + 1,
    name: `g${i}`,
    description: '',
    channel: 'ch02',
    base_url: null,
    proxy_url: null,
    priority: 0,
    weight: 1,
    enabled: next() < 0.8,
    models: pick(NAMES, 0.3).map((external) => ({ external, upstream: 'u' })),
    created_at: new Date(Date.UTC(2025, 0, 1 + Math.floor(next() * 300))).toISOString(),
    updated_at: '2025-12-01T00:00:00.000Z',
  }));
  const key = {
    id: 1,
    name: 'k',
    masked: 'sy-...',
    protocols: [],
    groups: next() < 0.5 ? null : pick(groups, 0.6).map((g) => g.id),
    models: next() < 0.4 ? null : pick([...NAMES, 'not-served'], 0.5),
    record_request_body: false,
    quota: null,
    expires_at: null,
    enabled: true,
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    rotated_at: null,
  } satisfies AccessKeyRecord;
  return { groups, key };
}

function catalogOf(groups: GroupRecord[]): ModelCatalog {
  const groupsByModel = new Map<string, GroupRecord[]>();
  for (const g of groups) for (const m of g.models) groupsByModel.set(m.external, [...(groupsByModel.get(m.external) ?? []), g]);
  return { groups, groupsByModel };
}

// The reference: the key's lists searched as arrays.
function referenceSees(key: AccessKeyRecord, g: GroupRecord, external: string): boolean {
  return g.enabled && (key.groups === null || key.groups.includes(g.id)) && g.models.some((m) => m.external === external) && (key.models === null || key.models.includes(external));
}

t.test('visibleModelNames, modelVisibleTo, groupsServingTo and modelBody agree with the reference on random configurations', async (t) => {
  const next = random(12345);
  for (let round = 0; round < 300; round++) {
    const { groups, key } = configuration(next);
    const catalog = catalogOf(groups);
    const expected = [...new Set(NAMES.filter((n) => groups.some((g) => referenceSees(key, g, n))))].sort();
    t.same(visibleModelNames(key, groups), expected, `round ${round}: the list`);
    const listed = (modelListBody('completions', key, catalog, new URLSearchParams()) as { data: { id: string; created: number }[] }).data;
    t.same(listed.map((m) => m.id), expected, `round ${round}: the completions list`);
    for (const name of [...NAMES, 'not-served']) {
      t.equal(modelVisibleTo(key, name), key.models === null || key.models.includes(name));
      const serving = groups.filter((g) => referenceSees(key, g, name));
      t.same(groupsServingTo(key, name, catalog.groupsByModel.get(name) ?? []), serving);
      const body = modelBody('messages', name, key, catalog) as { id: string; created_at: string } | undefined;
      if (serving.length === 0) {
        t.equal(body, undefined, `round ${round}: ${name} not visible`);
        continue;
      }
      const earliest = new Date(Math.min(...serving.map((g) => Date.parse(g.created_at)))).toISOString();
      t.match(body, { id: name, created_at: earliest }, `round ${round}: ${name}`);
      t.equal(listed.find((m) => m.id === name)?.created, Math.floor(Date.parse(earliest) / 1000), `round ${round}: ${name} listed with the same time`);
    }
  }
});

t.test("a key's lists are read once per record, not once per model", async (t) => {
  const names = Array.from({ length: 300 }, (_, i) => `m-${i}`);
  const { groups, key } = configuration(random(7));
  const group = { ...groups[0]!, enabled: true, models: names.map((external) => ({ external, upstream: 'u' })) };
  let reads = 0;
  const counted = new Proxy([...names].reverse(), {
    get(target, property, receiver) {
      if (typeof property === 'string' && /^\d+$/.test(property)) reads++;
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
  const narrow: AccessKeyRecord = { ...key, groups: null, models: counted };
  t.same(visibleModelNames(narrow, [group]), [...names].sort());
  t.same(visibleModelNames(narrow, [group]), [...names].sort());
  t.ok(reads <= names.length, `each entry read at most once over two lists (${reads} reads)`);
});

t.test('one model is answered from the Groups serving it, without the whole configuration', async (t) => {
  const group = configuration(random(3)).groups[0]!;
  const serving = { ...group, enabled: true, models: [{ external: 'one', upstream: 'u' }] };
  const catalog = {
    get groups(): GroupRecord[] {
      throw new Error('the whole Group list was read');
    },
    groupsByModel: new Map([['one', [serving]]]),
  };
  const { key } = configuration(random(4));
  const all = { ...key, groups: null, models: null };
  t.match(modelBody('completions', 'one', all, catalog), { id: 'one', object: 'model' });
  t.equal(modelBody('completions', 'two', all, catalog), undefined);
});

t.test('a Group whose creation time does not read: the model is dated the Unix epoch', async (t) => {
  const group = { ...configuration(random(5)).groups[0]!, enabled: true, created_at: '', models: [{ external: 'one', upstream: 'u' }] };
  const { key } = configuration(random(6));
  const all = { ...key, groups: null, models: null };
  const catalog = catalogOf([group]);
  t.match(modelBody('messages', 'one', all, catalog), { created_at: '1970-01-01T00:00:00.000Z' });
  t.match(modelBody('completions', 'one', all, catalog), { created: 0 });
});
