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

t.test('a name=value segment picks the first array element whose member has that string value', async (t) => {
  const path = pathSegments('details.modality=AUDIO.tokenCount');
  t.same(path, ['details', { member: 'modality', equals: 'AUDIO' }, 'tokenCount']);
  const details = [{ modality: 'TEXT', tokenCount: 1 }, { modality: 'AUDIO', tokenCount: 2 }, { modality: 'AUDIO', tokenCount: 3 }];
  t.equal(readSegments({ details }, path), 2, 'the first match');
  t.equal(readSegments({ details: [null, 'AUDIO', { modality: 'TEXT', tokenCount: 1 }] }, path), undefined, 'no match, and elements that are no objects, skipped');
  t.equal(readSegments({ details: { modality: 'AUDIO', tokenCount: 2 } }, path), undefined, 'an object is no array to pick from');
  t.equal(readSegments({ details: [{ modality: 'audio', tokenCount: 2 }] }, path), undefined, 'the value is matched exactly');
});
