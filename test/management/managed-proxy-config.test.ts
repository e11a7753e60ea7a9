import t, { type Test } from 'tap';
import { CHANNELS, CREDENTIAL_KINDS, type ChannelId } from '../../src/generated/index.ts';
import type { CallResult } from './support/http-client.ts';
import { startGateway, type Gateway } from './support/gateway.ts';

// The schemes the managed proxy speaks (management-api.md, data-plane-internals.md).
const SUPPORTED = ['http', 'https', 'socks5', 'socks5h'];

const REFUSED_URLS = [
  { url: 'ftp://proxy.test:21', reason: 'unsupported_proxy_scheme' },
  { url: 'socks4://proxy.test:1080', reason: 'unsupported_proxy_scheme' },
  { url: 'socks5://', reason: 'proxy_host_missing' },
  { url: 'socks5://:1080', reason: 'invalid_proxy_url' },
  { url: 'http://proxy.test:0', reason: 'proxy_port_invalid' },
  // SOCKS5 sends the user and the password each with a one-byte length (RFC 1929): bytes of the decoded value count.
  { url: `socks5://u:${'p'.repeat(256)}@proxy.test:1080`, reason: 'proxy_credentials_too_long' },
  { url: `socks5h://${'u'.repeat(256)}:pw@proxy.test:1080`, reason: 'proxy_credentials_too_long' },
  { url: `socks5://u:${encodeURIComponent('€'.repeat(86))}@proxy.test:1080`, reason: 'proxy_credentials_too_long' },
];
const ACCEPTED_URLS = [
  'http://proxy.test:3128',
  'https://proxy.test',
  'socks5://proxy.test:1080',
  'socks5h://user:pw@proxy.test:1080',
  `socks5://${'u'.repeat(255)}:${encodeURIComponent('€'.repeat(85))}@proxy.test:1080`,
  // A Basic Proxy-Authorization header has no such limit.
  `http://u:${'p'.repeat(320)}@proxy.test:3128`,
];

let secretCounter = 0;

/** A credential kind of the channel with one secret (so a list of keys can be imported) and values for every required field. */
function credentialFor(channel: string) {
  const kind = CHANNELS[channel as ChannelId].credential_kinds.map((k) => CREDENTIAL_KINDS[k]).find((k) => k.fields.filter((f) => f.required && f.secret).length === 1);
  if (!kind) throw new Error(`${channel}: no kind with a single secret`);
  const secret = kind.fields.find((f) => f.required && f.secret)!;
  const common: Record<string, string> = {};
  for (const f of kind.fields) if (f.required && !f.secret) common[f.name] = ['base_url', 'endpoint'].includes(f.name) ? 'https://upstream.test' : `value-${f.name}`;
  const secretValue = `secret-${channel}-${++secretCounter}-000000`;
  return { kind: kind.id, common, secretName: secret.name, secretValue };
}

async function newGroup(gw: Gateway, channel: string, body: Record<string, unknown> = {}): Promise<CallResult> {
  return gw.create('/api/groups', { name: `g-${channel}-${++secretCounter}`, channel, base_url: 'https://upstream.test', ...body });
}

async function groupId(gw: Gateway, channel: string): Promise<number> {
  const res = await newGroup(gw, channel);
  if (res.status !== 201) throw new Error(`group on ${channel}: ${res.status} ${res.text}`);
  return res.json.data.id;
}

async function connect(gw: Gateway, group: number, channel: string, extra: Record<string, unknown> = {}): Promise<CallResult> {
  const c = credentialFor(channel);
  return gw.create(`/api/groups/${group}/credentials/connect`, { kind: c.kind, fields: { ...c.common, [c.secretName]: c.secretValue }, ...extra });
}

/**
 * Every place a proxy URL is set, on a Group of `channel`: each submits `proxyUrl` (absent when
 * undefined) and reads back the proxy_url stored where it was set (null when nothing was).
 */
const PLACES: Array<{ name: string; set(gw: Gateway, channel: string, proxyUrl: string | undefined): Promise<{ res: CallResult; stored(): Promise<unknown> }> }> = [
  {
    name: 'group create',
    async set(gw, channel, proxyUrl) {
      const res = await newGroup(gw, channel, proxyUrl === undefined ? {} : { proxy_url: proxyUrl });
      const id = res.json.data?.id;
      return { res, stored: async () => (id === undefined ? null : (await gw.api('GET', `/api/groups/${id}/settings`)).json.data.proxy_url) };
    },
  },
  {
    name: 'group settings',
    async set(gw, channel, proxyUrl) {
      const id = await groupId(gw, channel);
      const res = await gw.api('PUT', `/api/groups/${id}/settings`, { body: proxyUrl === undefined ? { priority: 1 } : { proxy_url: proxyUrl } });
      return { res, stored: async () => (await gw.api('GET', `/api/groups/${id}/settings`)).json.data.proxy_url };
    },
  },
  {
    name: 'credential import',
    async set(gw, channel, proxyUrl) {
      const id = await groupId(gw, channel);
      const c = credentialFor(channel);
      const res = await gw.create(`/api/groups/${id}/credentials/import`, { credentials: c.secretValue, kind: c.kind, fields: c.common, ...(proxyUrl === undefined ? {} : { proxy_url: proxyUrl }) });
      return { res, stored: async () => (await gw.api('GET', `/api/groups/${id}/credentials`)).json.data[0]?.proxy_url ?? null };
    },
  },
  {
    name: 'credential connect',
    async set(gw, channel, proxyUrl) {
      const id = await groupId(gw, channel);
      const res = await connect(gw, id, channel, proxyUrl === undefined ? {} : { proxy_url: proxyUrl });
      return { res, stored: async () => (await gw.api('GET', `/api/groups/${id}/credentials`)).json.data[0]?.proxy_url ?? null };
    },
  },
  {
    name: 'credential update',
    async set(gw, channel, proxyUrl) {
      const id = await groupId(gw, channel);
      const created = await connect(gw, id, channel);
      if (created.status !== 201) throw new Error(`connect on ${channel}: ${created.status} ${created.text}`);
      const path = `/api/groups/${id}/credentials/${created.json.data.id}`;
      const res = await gw.api('PATCH', path, { body: proxyUrl === undefined ? { name: 'renamed' } : { proxy_url: proxyUrl } });
      return { res, stored: async () => (await gw.api('GET', path)).json.data.proxy_url };
    },
  },
];

const GLOBAL = {
  name: 'global settings',
  async set(gw: Gateway, _channel: string, proxyUrl: string | undefined) {
    const res = await gw.api('PUT', '/api/settings', { body: proxyUrl === undefined ? {} : { proxy_url: proxyUrl } });
    return { res, stored: async () => (await gw.api('GET', '/api/settings')).json.data.proxy_url };
  },
};

function isSuccess(res: CallResult): boolean {
  return res.status >= 200 && res.status < 300;
}

t.test('a proxy URL the upstream client cannot use is refused wherever a proxy is set', async (t) => {
  const gw = await startGateway(t);
  for (const place of [...PLACES, GLOBAL]) {
    await t.test(place.name, async (t: Test) => {
      for (const { url, reason } of REFUSED_URLS) {
        const { res, stored } = await place.set(gw, 'ch02', url);
        t.equal(res.status, 400, url);
        t.equal(res.json.code, 'VALIDATION_FAILED', url);
        t.match(res.json.data, { field: 'proxy_url', reason }, url);
        t.same(res.json.data.supported_schemes, SUPPORTED, `${url}: the answer names the supported schemes`);
        t.equal(await stored(), null, `${url}: nothing stored`);
      }
      for (const url of ACCEPTED_URLS) {
        const { res, stored } = await place.set(gw, 'ch02', url);
        t.ok(isSuccess(res), `${url} accepted (${res.status} ${res.text})`);
        t.equal(await stored(), url, `${url} stored as submitted`);
      }
    });
  }
});

// Note 14: the channels without managed proxy, as the manifest declares them.
const NO_PROXY_CHANNELS = Object.entries(CHANNELS)
  .filter(([, c]) => !c.proxy)
  .map(([id]) => id);

t.test('the manifest declares exactly ch16, ch17 and ch18 without managed proxy (note 14)', async (t) => {
  t.same(NO_PROXY_CHANNELS, ['ch16', 'ch17', 'ch18']);
});

t.test('channels without managed proxy refuse a proxy at Group and credential scope', async (t) => {
  const gw = await startGateway(t);
  for (const channel of NO_PROXY_CHANNELS) {
    for (const place of PLACES) {
      await t.test(`${channel}: ${place.name}`, async (t: Test) => {
        const without = await place.set(gw, channel, undefined);
        t.ok(isSuccess(without.res), `accepted without a proxy (${without.res.status} ${without.res.text})`);
        const { res } = await place.set(gw, channel, 'http://proxy.test:3128');
        t.equal(res.status, 400);
        t.equal(res.json.code, 'VALIDATION_FAILED');
        t.match(res.json.data, { field: 'proxy_url', reason: 'channel_has_no_managed_proxy', channel, note: 14 });
      });
    }
  }
});
