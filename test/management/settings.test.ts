import t from 'tap';
import { DEFAULT_SETTINGS } from '../../src/store/default-settings.ts';
import { startGateway } from './support/gateway.ts';

t.test('GET returns every known setting with its default', async (t) => {
  const gw = await startGateway(t);
  t.same((await gw.api('GET', '/api/settings')).json.data, DEFAULT_SETTINGS);
});

t.test('PUT saves exactly the submitted items; the last save of an item wins', async (t) => {
  const gw = await startGateway(t);
  const a = await gw.api('PUT', '/api/settings', { body: { log_retention_days: 7, update_feed_url: 'https://releases.test/feed.json' } });
  t.equal(a.status, 200);
  t.match(a.json.data, { log_retention_days: 7, update_feed_url: 'https://releases.test/feed.json', request_timeout_seconds: DEFAULT_SETTINGS.request_timeout_seconds });
  const b = await gw.api('PUT', '/api/settings', { body: { log_retention_days: 14 } });
  t.match(b.json.data, { log_retention_days: 14, update_feed_url: 'https://releases.test/feed.json' }, 'an item not submitted keeps its value');
  const cleared = await gw.api('PUT', '/api/settings', { body: { update_feed_url: null } });
  t.equal(cleared.json.data.update_feed_url, null);
  t.equal((await gw.api('PUT', '/api/settings', { body: {} })).status, 200, 'an empty object saves nothing');
  await gw.restart();
  t.equal((await gw.api('GET', '/api/settings')).json.data.log_retention_days, 14, 'durable');
  t.equal((await gw.api('PUT', '/api/settings', { body: {}, headers: { 'If-Match': '"stale"' } })).status, 200, 'If-Match plays no part');
});

t.test('PUT validates against the schema of known settings', async (t) => {
  const gw = await startGateway(t);
  const unknown = await gw.api('PUT', '/api/settings', { body: { theme: 'dark' } });
  t.same(unknown.json.data, { field: 'theme', reason: 'unknown_field' });
  const wrongType = await gw.api('PUT', '/api/settings', { body: { log_retention_days: '7' } });
  t.match(wrongType.json.data, { field: 'log_retention_days', reason: 'wrong_type' });
  const badProxy = await gw.api('PUT', '/api/settings', { body: { trusted_proxies: ['10.0.0.0/8', '300.1.1.1'] } });
  t.match(badProxy.json.data, { field: 'trusted_proxies[1]', reason: 'invalid_value' });
  const badUrl = await gw.api('PUT', '/api/settings', { body: { proxy_url: 'not a url' } });
  t.match(badUrl.json.data, { field: 'proxy_url', reason: 'invalid_value', rule: 'format' });
  t.notOk('supported_schemes' in badUrl.json.data, 'a text that is no URI is refused by the schema, before its scheme is read');
  t.same((await gw.api('GET', '/api/settings')).json.data.trusted_proxies, [], 'nothing of a rejected body was saved');
  // The release feed and the price list are fetched over HTTP(S): a file or FTP URL would only fail later, as a remote failure.
  for (const field of ['update_feed_url', 'model_price_sync_url']) {
    for (const url of ['file:///etc/passwd', 'ftp://example.test/prices.json']) {
      const refused = await gw.api('PUT', '/api/settings', { body: { [field]: url } });
      t.equal(refused.status, 400, `${field}: ${url}`);
      t.match(refused.json.data, { field, reason: 'invalid_value' });
    }
    t.equal((await gw.api('PUT', '/api/settings', { body: { [field]: 'HTTPS://example.test/x.json' } })).status, 200, `${field}: https in capitals`);
  }
  t.equal((await gw.api('GET', '/api/settings')).json.data.update_feed_url, 'HTTPS://example.test/x.json');
});

t.test('stream_idle_timeout_seconds is a known setting: an integer from 1 to 3600, default 120', async (t) => {
  const gw = await startGateway(t);
  t.equal((await gw.api('GET', '/api/settings')).json.data.stream_idle_timeout_seconds, 120);
  for (const bad of [0, 3601, 1.5]) {
    const res = await gw.api('PUT', '/api/settings', { body: { stream_idle_timeout_seconds: bad } });
    t.equal(res.status, 400, `${bad} is refused`);
    t.match(res.json.data, { field: 'stream_idle_timeout_seconds' });
  }
  const saved = await gw.api('PUT', '/api/settings', { body: { stream_idle_timeout_seconds: 30 } });
  t.match(saved.json.data, { stream_idle_timeout_seconds: 30, request_timeout_seconds: DEFAULT_SETTINGS.request_timeout_seconds });
  await gw.restart();
  t.equal((await gw.api('GET', '/api/settings')).json.data.stream_idle_timeout_seconds, 30, 'durable');
});
