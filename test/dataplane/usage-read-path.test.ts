import t from 'tap';
import { pathSegments, readSegments } from '../../src/usage/read-path.ts';

t.test('a number segment indexes an array, and only an array; a name reads only an object', async (t) => {
  const path = pathSegments('choices.0.usage');
  t.same(path, ['choices', 0, 'usage']);
  t.same(readSegments({ choices: [{ usage: { prompt_tokens: 1 } }] }, path), { prompt_tokens: 1 });
  t.equal(readSegments({ choices: { 0: { usage: { prompt_tokens: 1 } } } }, path), undefined, 'an object member named 0 is no index');
  t.equal(readSegments({ choices: [] }, path), undefined);
  t.equal(readSegments([{ usage: 1 }], pathSegments('usage')), undefined, 'an array has no members');
  t.equal(readSegments({ usage: [{ prompt_tokens: 1 }] }, pathSegments('usage.prompt_tokens')), undefined);
});
