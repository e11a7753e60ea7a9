import t from 'tap';
import { QuotedNameSearch } from '../../src/dataplane/relay/quoted-name-search.ts';

/** Every start of `"name"` in `text`, found by comparing at each position: what the search must agree with. */
function everyStart(text: string, name: string): number[] {
  const quoted = `"${name}"`;
  const starts: number[] = [];
  for (let i = 0; i + quoted.length <= text.length; i++) if (text.startsWith(quoted, i)) starts.push(i);
  return starts;
}

function found(search: QuotedNameSearch, text: string): number[] {
  const bytes = Buffer.from(text, 'latin1');
  const starts: number[] = [];
  for (let at = search.indexIn(bytes); at !== -1; at = search.indexIn(bytes, at + 1)) starts.push(at);
  return starts;
}

const SAMPLES = [
  'data: {"error":{"message":"x"}}\n\n',
  '"error"',
  '{"terror":1,"errors":2,"error" :3,"rror":4,"xerror":5}',
  'data: {"id":"1","choices":[{"delta":{"content":"an error\\"error\\" in prose"}}]}\n\ndata: {"error":null}\n\n',
  'error" "error "error"error"',
  '{"type":"response.failed","response":{"status":"failed"}}',
  '{"_":1,"__":"_"}',
];

for (const name of ['error', 'response.failed', 'usage', '_', 'x']) {
  t.test(`"${name}" is found exactly where it stands`, async (t) => {
    const search = new QuotedNameSearch(name);
    t.equal(search.length, name.length + 2);
    for (const sample of SAMPLES) {
      const expected = everyStart(sample, name);
      t.same(found(search, sample), expected, sample);
    }
  });
}

t.test('a search from a position finds no name that starts before it, even when its anchor lies after it', async (t) => {
  const search = new QuotedNameSearch('error');
  const text = 'ab"error"';
  t.equal(search.indexIn(Buffer.from(text), 2), 2);
  t.equal(search.indexIn(Buffer.from(text), 3), -1);
});

t.test('a quoted name at the very start of a subarray is found within the subarray only', async (t) => {
  const search = new QuotedNameSearch('error');
  const whole = Buffer.from('x"error"');
  t.equal(search.indexIn(whole.subarray(1)), 0);
  t.equal(search.indexIn(whole.subarray(2)), -1, 'a quote before the view is not read');
});
