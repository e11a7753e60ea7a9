import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createServer } from '../../src/server/create-server.ts';
import { StoreFileError } from '../../src/store/lowdb/index.ts';
import { spawnServe } from '../helpers/spawn-serve.ts';
import { AUTH_KEY, startGateway, tempDataDir } from './support/gateway.ts';

// Settings in a hand-edited config.json obey the schema PUT /api/settings validates with: a value
// it would refuse stops the start, naming the file and the setting, rather than failing requests.

/** A hand-written config.json holding `settings` and nothing else; its path and text. */
function writeConfig(dataDir: string, settings: Record<string, unknown>): { file: string; text: string } {
  const file = path.join(dataDir, 'config.json');
  const text = JSON.stringify({
    version: 1,
    next_id: { group: 1, credential: 1, access_key: 1, credential_stage: 1 },
    groups: [],
    credentials: [],
    access_keys: [],
    settings,
    model_prices: [],
    credential_stages: [],
  });
  writeFileSync(file, text);
  return { file, text };
}

for (const [setting, value, problem] of [
  ['credential_cooldown_seconds', 'abc', /must be integer/],
  ['max_attempts_per_request', 0, /must be >= 1/],
  ['stream_idle_timeout_seconds', 10_000_000, /must be <= 3600/],
  ['credential_cooldown_seconds', -1, /must be >= 0/],
  ['trusted_proxies', ['10.0.0.1', 'not an address'], /trusted_proxies\[1\] is "not an address", which must match pattern/],
  ['trusted_proxies', ['10.0.0.0/8', '10.0.0.0/99'], /trusted_proxies\[1\] is "10.0.0.0\/99", which is not an IP address or CIDR/],
  ['max_attempt_per_request', 3, /is not a known setting/],
] as const) {
  t.test(`a stored ${setting} of ${JSON.stringify(value)} stops the start, naming the file and the setting`, async (t) => {
    const dataDir = tempDataDir(t);
    const { file, text } = writeConfig(dataDir, { log_retention_days: 5, [setting]: value });
    const err = await createServer({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
    t.ok(err instanceof StoreFileError, 'a StoreFileError');
    t.equal((err as StoreFileError).file, file);
    t.match((err as Error).message, file, 'the message names the file');
    t.match((err as Error).message, `settings.${setting}`, 'and the setting');
    t.match((err as Error).message, problem, 'and the problem');
    t.equal(readFileSync(file, 'utf8'), text, 'the file is exactly as it was');
  });
}

// A value the schema refuses may be one `new URL` cannot parse: its user info is masked all the same, with a scheme's `//` or without one.
for (const [stored, shown] of [
  ['http://relay:s3cret pass@proxy.test:8080', '"http://***@proxy.test:8080"'],
  ['relay:s3cret pass@proxy.test:8080', '"***@proxy.test:8080"'],
  ['relay:s3c//ret pass@proxy.test:8080', '"***@proxy.test:8080"'],
] as const) {
  t.test(`a stored proxy_url the schema refuses (${stored}) is named without its user and password`, async (t) => {
    const dataDir = tempDataDir(t);
    writeConfig(dataDir, { proxy_url: stored });
    const err = await createServer({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
    t.ok(err instanceof StoreFileError, 'a StoreFileError');
    const { message } = err as Error;
    t.match(message, `settings.proxy_url is ${shown}, which must match format "uri"`, 'the setting, its host and the problem');
    t.notMatch(message, 's3cret', 'not the password');
    t.notMatch(message, 'relay', 'nor the user');
  });
}

// The schema takes any URI; the API also refuses a proxy the upstream client cannot use (as for
// a Group's or a credential's, which the start refuses too), or every request through it would fail.
for (const [stored, problem] of [
  ['socks4://relay:s3cret@proxy.test:1080', /unsupported proxy scheme socks4:/],
  ['http://relay:s3cret@proxy.test:3128/path', /proxy URL http:\/\/\*\*\*@proxy.test:3128\/path has a path/],
  ['socks5://relay:s3cret@proxy.test:0', /has port 0/],
] as const) {
  t.test(`a stored proxy_url the upstream client cannot use (${stored.split(':')[0]}) stops the start, named without its password`, async (t) => {
    const dataDir = tempDataDir(t);
    const { file, text } = writeConfig(dataDir, { proxy_url: stored });
    const err = await createServer({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, log: () => undefined }).catch((e: unknown) => e);
    t.ok(err instanceof StoreFileError, 'a StoreFileError');
    const { message } = err as Error;
    t.match(message, file, 'the message names the file');
    t.match(message, 'settings.proxy_url', 'and the setting');
    t.match(message, problem, 'and the problem');
    t.notMatch(message, 's3cret', 'not the password');
    t.equal(readFileSync(file, 'utf8'), text, 'the file is exactly as it was');
  });
}

t.test('stored settings the API would accept start; absent ones take their defaults', async (t) => {
  const dataDir = tempDataDir(t);
  writeConfig(dataDir, { credential_cooldown_seconds: 0, max_attempts_per_request: 20, stream_idle_timeout_seconds: 3600, trusted_proxies: ['10.0.0.0/8'], proxy_url: null });
  const gw = await startGateway(t, { dataDir });
  const settings = (await gw.api('GET', '/api/settings')).json.data;
  t.match(settings, { credential_cooldown_seconds: 0, max_attempts_per_request: 20, stream_idle_timeout_seconds: 3600, trusted_proxies: ['10.0.0.0/8'], proxy_url: null });
  t.match(settings, { log_retention_days: 30, request_timeout_seconds: 590 }, 'defaults for the settings the file leaves out');
});

t.test('serve refuses a stored setting the API would refuse, saying which, and exits 1', async (t) => {
  const dataDir = tempDataDir(t);
  const { file, text } = writeConfig(dataDir, { max_attempts_per_request: 0 });
  const child = spawnServe(['--port', '0', '--data', dataDir], { AUTH_KEY: AUTH_KEY });
  t.teardown(() => child.kill('SIGKILL'));
  t.notOk(await child.url.then(() => true, () => false), 'it never listens');
  child.kill('SIGKILL');
  const { code, stderr } = await child.exit;
  t.equal(code, 1);
  t.match(stderr, file);
  t.match(stderr, 'settings.max_attempts_per_request is 0, which must be >= 1');
  t.equal(readFileSync(file, 'utf8'), text);
});
