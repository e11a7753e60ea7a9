import t from 'tap';
import { upstreamUrl } from '../../src/dataplane/upstream-target.ts';

t.test('a path without parameters joins base, path and query', async (t) => {
  t.equal(upstreamUrl('http://up.test', '/v1/chat/completions', {}, 'm', '?a=1'), 'http://up.test/v1/chat/completions?a=1');
  t.equal(upstreamUrl('http://up.test/base//', '/v1/embeddings', {}, null, ''), 'http://up.test/base/v1/embeddings');
});

t.test('parameters are substituted and encoded; the upstream model replaces {model}', async (t) => {
  t.equal(
    upstreamUrl('http://up.test/', '/v1beta/models/{model}:generateContent', { model: 'client-model' }, 'up/model x', '?alt=sse'),
    'http://up.test/v1beta/models/up%2Fmodel%20x:generateContent?alt=sse',
  );
  t.equal(upstreamUrl('http://up.test', '/v1/files/{file_id}', { file_id: 'a b' }, null, ''), 'http://up.test/v1/files/a%20b');
  t.equal(upstreamUrl('http://up.test', '/ns/{rest*}', { rest: 'x y/z' }, null, ''), 'http://up.test/ns/x%20y/z');
});
