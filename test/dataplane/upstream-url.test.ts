import t from 'tap';
import { upstreamTarget, upstreamUrl } from '../../src/dataplane/upstream-target.ts';

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

t.test('upstreamTarget splits the same URL into origin and path, the base URL parsed once', async (t) => {
  const cases: Array<[string, string, Record<string, string>, string | null, string]> = [
    ['http://up.test', '/v1/chat/completions', {}, 'm', '?a=1'],
    ['http://up.test/base//', '/v1/embeddings', {}, null, ''],
    ['https://up.test:8443/v1beta/', '/models/{model}:generateContent', { model: 'client-model' }, 'up/model x', '?alt=sse'],
    ['http://UP.test:80/prefix', '/ns/{rest*}', { rest: 'x y/z' }, null, ''],
  ];
  for (const [base, path, params, model, search] of cases) {
    const target = upstreamTarget(base, path, params, model, search);
    const url = new URL(upstreamUrl(base, path, params, model, search));
    t.equal(target.origin, url.origin, `${base}: origin`);
    t.equal(target.path, `${url.pathname}${url.search}`, `${base}: path and query`);
  }
  t.same(upstreamTarget('http://up.test', '/v1/x', {}, null, ''), { origin: 'http://up.test', path: '/v1/x' });
});
