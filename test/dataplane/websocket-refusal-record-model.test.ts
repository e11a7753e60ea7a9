import t from 'tap';
import { realtimeRoute, startWsUpstream, upgradeAnswer } from './helpers/ws-upstream.ts';
import { waitForLog } from './helpers/dataplane-scenarios.ts';

// As an HTTP operation's: a session's record names the model its query gives from the start,
// refused by the key's checks or not, so the key's refusals are found under that model.

t.test('a session refused by the key, or by its quota, is recorded under the model its query names', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const route = await realtimeRoute(t, upstream.url, { quota: { total: { requests: 0 } } });

  const overQuota = await upgradeAnswer(route.wsUrl);
  t.equal(overQuota.status, 429);
  const quotaRecord = await waitForLog(route.gw, overQuota.headers['x-switchyard-request-id']);
  t.match(quotaRecord, { status: 429, error_code: 'quota_exceeded', access_key_id: route.key.id, external_model: 'voice', group_id: null, credential_id: null });

  const unknownKey = await upgradeAnswer(route.wsUrl.replace(/key=[^&]+/, 'key=sk-not-a-key'));
  t.equal(unknownKey.status, 401);
  const keyRecord = await waitForLog(route.gw, unknownKey.headers['x-switchyard-request-id']);
  t.match(keyRecord, { status: 401, error_code: 'access_key_invalid', access_key_id: null, external_model: 'voice' });
  t.equal(upstream.seen.length, 0, 'neither reached the upstream');
});

t.test('a model over the name cap is left out of the record, and refused as before once the key passed', async (t) => {
  const upstream = await startWsUpstream();
  t.teardown(() => upstream.close());
  const route = await realtimeRoute(t, upstream.url);
  const refused = await upgradeAnswer(route.wsUrl.replace('model=voice', `model=${'m'.repeat(5000)}`));
  const record = await waitForLog(route.gw, refused.headers['x-switchyard-request-id']);
  t.equal(record.external_model, null);
  t.equal(record.status, refused.status);
  t.equal(record.access_key_id, route.key.id);
});
