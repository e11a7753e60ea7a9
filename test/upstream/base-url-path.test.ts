import t from 'tap';
import { basePath, joinBasePath, joinBaseUrl } from '../../src/upstream/index.ts';
import { upstreamTarget, upstreamUrl } from '../../src/dataplane/upstream-target.ts';

t.test('a versionless base URL is the API root: the path is joined without its version segment', async (t) => {
  t.equal(joinBaseUrl('https://api.perplexity.ai', '/v1/chat/completions', true), 'https://api.perplexity.ai/chat/completions');
  t.equal(joinBaseUrl('https://models.github.ai/inference/', '/v1/chat/completions', true), 'https://models.github.ai/inference/chat/completions', 'the prefix kept, its trailing slash not doubled');
  t.equal(joinBaseUrl('https://res.services.ai.azure.com/models', '/v1/chat/completions', true), 'https://res.services.ai.azure.com/models/chat/completions');
  t.equal(joinBaseUrl('https://host/root', '/v1beta/models/{model}:generateContent', true), 'https://host/root/models/{model}:generateContent', 'a staged version left out too');
  t.equal(joinBaseUrl('https://host/openai', '/openai/deployments/x/chat/completions', true), 'https://host/openai/openai/deployments/x/chat/completions', 'a path with no version segment appended whole');
  t.equal(joinBaseUrl('https://host/api/v1', '/v1/models', true), 'https://host/api/v1/models', "a base URL's own version is part of the root, not a stand-in");
  t.equal(joinBaseUrl('https://host/v2ray', '/v2ray/x', true), 'https://host/v2ray/v2ray/x', 'not a version: kept');
});

t.test('without versionless, the join is as before', async (t) => {
  t.equal(joinBaseUrl('https://api.perplexity.ai', '/v1/chat/completions'), 'https://api.perplexity.ai/v1/chat/completions');
  t.equal(joinBaseUrl('https://host/v1', '/v1/chat/completions', false), 'https://host/v1/chat/completions');
  t.equal(joinBaseUrl('https://host/v1', '/v1beta/models/m:generateContent'), 'https://host/v1beta/models/m:generateContent');
  t.same(basePath('/api/paas/v4/'), { prefix: '/api/paas', version: 'v4', versionless: false });
  t.same(basePath('/api/paas/v4/', true), { prefix: '/api/paas/v4', version: undefined, versionless: true });
  t.equal(joinBasePath(basePath('/inference', true), '/v1/embeddings'), '/inference/embeddings');
});

t.test('the data plane target follows the flag for one base URL string, whichever was asked first', async (t) => {
  // The targets cache a parsed base URL by its string: the flag must be part of that key.
  t.equal(upstreamUrl('http://cache.test/api', '/v1/chat/completions', {}, null, '?a=1'), 'http://cache.test/api/v1/chat/completions?a=1');
  t.equal(upstreamUrl('http://cache.test/api', '/v1/chat/completions', {}, null, '?a=1', true), 'http://cache.test/api/chat/completions?a=1');
  t.same(upstreamTarget('http://cache2.test', '/v1beta/models/{model}:streamGenerateContent', { model: 'x' }, 'up m', '', true), { origin: 'http://cache2.test', path: '/models/up%20m:streamGenerateContent' });
  t.same(upstreamTarget('http://cache2.test', '/v1beta/models/{model}:streamGenerateContent', { model: 'x' }, 'up m', ''), { origin: 'http://cache2.test', path: '/v1beta/models/up%20m:streamGenerateContent' });
});
