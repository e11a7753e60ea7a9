import t from 'tap';
import { parseObjectTail } from '../../src/usage/parse-object-tail.ts';

t.test('top-level members from the first key on, the same values JSON.parse gives', async (t) => {
  const text = JSON.stringify({ id: 'c1', choices: [{ message: { content: 'say "usage": {}' } }], usage: { prompt_tokens: 3 }, tail: [1, { a: 'b' }] });
  t.same(parseObjectTail(text, '"usage"'), { usage: { prompt_tokens: 3 }, tail: [1, { a: 'b' }] });
  t.same(parseObjectTail(text, '"choices"'), { choices: [{ message: { content: 'say "usage": {}' } }], usage: { prompt_tokens: 3 }, tail: [1, { a: 'b' }] }, 'from another member on');
  t.same(parseObjectTail(` ${text}\n`, '"usage"'), { usage: { prompt_tokens: 3 }, tail: [1, { a: 'b' }] }, 'whitespace around the object');
});

t.test('a key only found inside nested values, in a string or not at all gives undefined (parse the whole then)', async (t) => {
  t.equal(parseObjectTail('{"a":{"usage":{"x":1}}}', '"usage"'), undefined, 'nested one level');
  t.equal(parseObjectTail('{"a":[{"usage":1},{"b":2}]}', '"usage"'), undefined, 'inside an array');
  t.equal(parseObjectTail('{"usage":{"x":1},"b":{"usage":2}}', '"usage"'), undefined, 'the last occurrence is nested, though a top-level one came first');
  t.equal(parseObjectTail('{"type":"usage"}', '"usage"'), undefined, 'a string value');
  t.equal(parseObjectTail('{"a":"\\"usage\\":1"}', '"usage"'), undefined, 'escaped quotes in a string are not a key');
  t.equal(parseObjectTail('{"choices":[]}', '"usage"'), undefined, 'absent');
  t.equal(parseObjectTail('<html>"usage"</html>', '"usage"'), undefined, 'not JSON');
});

t.test('for every key placement the answer is the whole parse\'s usage, or none when the last key is nested', async (t) => {
  const shapes: Array<[object, boolean]> = [
    [{ usage: { n: 1 } }, true],
    [{ a: 1, usage: { n: 2 }, b: { usage: 'nested' } }, false],
    [{ a: { usage: { n: 3 } }, usage: { n: 4 } }, true],
    [{ usage: { n: 5 }, a: [{ usage: 6 }] }, false],
    [{ list: ['usage', { usage: 7 }], usage: 8 }, true],
    [{ usage: 1, usage2: { usage: 9 } }, false],
  ];
  for (const [shape, readable] of shapes) {
    const text = JSON.stringify(shape);
    const tail = parseObjectTail(text, '"usage"');
    if (readable) t.same(tail?.['usage'], (JSON.parse(text) as Record<string, unknown>)['usage'], `${text}: the whole's usage`);
    else t.equal(tail, undefined, `${text}: left to the whole parse`);
  }
});

t.test('the last of several top-level duplicates is the one read, as JSON.parse reads it', async (t) => {
  t.same(parseObjectTail('{"usage":{"n":1},"x":2,"usage":{"n":3}}', '"usage"'), { usage: { n: 3 } });
});
