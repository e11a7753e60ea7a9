import path from 'node:path';
import t, { type Test } from 'tap';
import { fillTheDisk } from '../helpers/fill-the-disk.ts';
import { JsonDocument } from '../../src/store/lowdb/json-document.ts';
import { tempDataDir } from '../management/support/gateway.ts';

// Mutations that share a write are handed their results in the order they were asked, whether
// each was applied or refused (before or after others' edits), and whether the write landed.

interface Doc {
  log: string[];
}

async function open(t: Test): Promise<JsonDocument<Doc>> {
  const doc = await JsonDocument.open<Doc>(path.join(tempDataDir(t), 'doc.json'), () => ({ log: [] }), () => undefined);
  t.teardown(() => doc.close());
  return doc;
}

/** One turn of batched mutations: refused by its precheck, applied, refused after an edit, applied, refused after edits. */
function oneTurn(doc: JsonDocument<Doc>): { settled: string[]; all: Promise<unknown> } {
  const settled: string[] = [];
  const refuse = (name: string) => () => {
    throw new Error(name);
  };
  const apply = (name: string) => (d: Doc) => {
    d.log.push(name);
    return name;
  };
  const asked = [
    doc.mutateBatched(apply('a'), refuse('a')),
    doc.mutateBatched(apply('b')),
    doc.mutateBatched(refuse('c')),
    doc.mutateBatched(apply('d')),
    doc.mutateBatched(refuse('e')),
  ];
  asked.forEach((p, i) => p.then(() => settled.push(`${i}`), () => settled.push(`${i}`)));
  return { settled, all: Promise.allSettled(asked) };
}

t.test('a turn that is written settles its mutations in the order they were asked', async (t) => {
  const doc = await open(t);
  const { settled, all } = oneTurn(doc);
  const outcomes = (await all) as PromiseSettledResult<string>[];
  await new Promise((resolve) => setImmediate(resolve));
  t.same(settled, ['0', '1', '2', '3', '4']);
  t.same(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)), ['a', 'b', 'c', 'd', 'e']);
  t.same(doc.data.log, ['b', 'd'], 'one write of both edits');
  t.equal(doc.generation, 1);
});

t.test('a turn whose write fails settles its mutations in the order they were asked too', async (t) => {
  const doc = await open(t);
  const restore = fillTheDisk(t, 'doc.json');
  const { settled, all } = oneTurn(doc);
  const outcomes = (await all) as PromiseSettledResult<string>[];
  restore();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(settled, ['0', '1', '2', '3', '4']);
  t.same(outcomes.map((o) => o.status), ['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
  t.equal((outcomes[0] as PromiseRejectedResult).reason.message, 'a', 'refused before any edit: its own refusal stands');
  t.ok(doc.lastWriteFailed);
  t.same(doc.data.log, []);
});
