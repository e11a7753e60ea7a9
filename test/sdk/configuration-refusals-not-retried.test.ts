import t, { type Test } from 'tap';
import OpenAI, { InternalServerError as OpenAIInternalServerError } from 'openai';
import Anthropic, { InternalServerError as AnthropicInternalServerError } from '@anthropic-ai/sdk';
import { seedRoute, startUpstreamAndDataPlane, type Gateway } from '../dataplane/helpers/data-plane-harness.ts';
import { loopbackCert, startLoopbackServer } from '../dataplane/helpers/loopback-server.ts';
import { chatCompletion, message, writeJson } from './helpers/vendor-wire.ts';

// A 5xx the operator's configuration causes (a Group without a base URL, a stored proxy URL
// the gateway cannot use, an upstream certificate the gateway refuses) fails the same way until
// the configuration changes: the SDKs' default two retries would only triple the requests,
// each one logged and counted.

const BREAKAGES = [
  { what: 'a Group without a base URL', code: 'upstream_base_url_missing', break: (_t: Test, gw: Gateway, groupId: number) => gw.store.groups.update(groupId, { base_url: '' }) },
  { what: 'a stored proxy URL of an unusable scheme', code: 'proxy_misconfigured', break: (_t: Test, gw: Gateway, groupId: number) => gw.store.groups.update(groupId, { proxy_url: 'ftp://proxy.test:21' }) },
  {
    what: 'an upstream certificate the gateway refuses',
    code: 'upstream_unreachable',
    async break(t: Test, gw: Gateway, groupId: number) {
      const selfSigned = await startLoopbackServer((_req, res) => res.end('{}'), { tls: loopbackCert });
      t.teardown(() => selfSigned.close());
      await gw.store.groups.update(groupId, { base_url: selfSigned.url });
    },
  },
];

async function brokenRoute(t: Test, channel: string, protocol: string, external: string, breakage: (typeof BREAKAGES)[number]) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => (channel === 'ch14' ? writeJson(res, 200, message('m', 'hi')) : writeJson(res, 200, chatCompletion('m', 'hi'))));
  const { group, key, keyValue } = await seedRoute(gw.store, { channel, baseUrl: upstream.url, models: [{ external, upstream: 'm' }], protocols: [protocol] });
  await breakage.break(t, gw, group.id);
  return { gw, upstream, keyValue, keyId: key.id };
}

async function codesLogged(gw: Gateway, keyId: number) {
  await gw.logs.flush();
  return (await gw.logs.list({ access_key_id: keyId }, { limit: 10 })).items.map((item) => item.error_code);
}

for (const breakage of BREAKAGES) {
  t.test(`openai, default retries: 502 ${breakage.code} is raised after one request (${breakage.what})`, async (t) => {
    const r = await brokenRoute(t, 'ch02', 'x-completions', 'team-chat', breakage);
    const err = await new OpenAI({ apiKey: r.keyValue, baseURL: `${r.gw.url}/v1` }).chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    t.type(err, OpenAIInternalServerError);
    t.equal((err as OpenAIInternalServerError).status, 502);
    t.equal((err as OpenAIInternalServerError).code, breakage.code);
    t.equal((err as OpenAIInternalServerError).headers?.get('x-should-retry'), 'false');
    t.same(await codesLogged(r.gw, r.keyId), [breakage.code], 'one request: the SDK did not send it again');
    t.equal(r.upstream.requests.length, 0);
  });

  t.test(`anthropic, default retries: 502 ${breakage.code} is raised after one request (${breakage.what})`, async (t) => {
    const r = await brokenRoute(t, 'ch14', 'x-messages', 'team-msg', breakage);
    const err = await new Anthropic({ apiKey: r.keyValue, baseURL: r.gw.url }).messages.create({ model: 'team-msg', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    t.type(err, AnthropicInternalServerError);
    t.equal((err as AnthropicInternalServerError).status, 502);
    t.equal((err as AnthropicInternalServerError).errorCode, breakage.code);
    t.same(await codesLogged(r.gw, r.keyId), [breakage.code], 'one request: the SDK did not send it again');
    t.equal(r.upstream.requests.length, 0);
  });
}
