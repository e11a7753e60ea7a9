// Before anything reads a date: an HTTP date is GMT whatever the gateway's own zone
// (RFC 9110 §5.6.7), so the verdicts below are made in a zone that is not UTC.
process.env.TZ = 'America/New_York';

import t from 'tap';
import type { ServerResponse } from 'node:http';
import { verdictFor } from '../../src/dataplane/credential-pool.ts';
import { startDataPlane, startUpstream } from './helpers/data-plane-harness.ts';
import { chatBody, createKey, credentialView, seedGroup } from './helpers/dataplane-scenarios.ts';

const DEFAULT_COOLDOWN_SECONDS = 45;
const DEFAULT_MS = DEFAULT_COOLDOWN_SECONDS * 1000;
const NOW = Date.UTC(2026, 10, 26, 20, 8, 7);

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');
const clock = (d: Date) => `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
/** The RFC 9110 §5.6.7 forms of an instant, built from its UTC fields. */
const asctime = (d: Date) => `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${clock(d)} ${d.getUTCFullYear()}`;
const rfc850 = (d: Date) => `${LONG_DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${two(d.getUTCFullYear() % 100)} ${clock(d)} GMT`;
const imfFixdate = (d: Date) => `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${clock(d)} GMT`;

function cooldownMs(headers: Record<string, string>, now = NOW): number | undefined {
  const verdict = verdictFor(429, headers, { credential_cooldown_seconds: DEFAULT_COOLDOWN_SECONDS, server_error_cooldown_seconds: 5 }, now);
  return verdict.action === 'cooldown' ? verdict.ms : undefined;
}

t.test('the test runs in a zone that is not UTC', async (t) => {
  t.not(new Date(NOW).getTimezoneOffset(), 0, 'local time differs from UTC, so a date read as local time is off');
});

t.test('Retry-After in each HTTP-date form is GMT, whatever the local zone', async (t) => {
  const in60 = new Date(NOW + 60_000);
  t.equal(cooldownMs({ 'retry-after': asctime(in60) }), 60_000, `asctime-date ${asctime(in60)}`);
  t.equal(cooldownMs({ 'retry-after': rfc850(in60) }), 60_000, `rfc850-date ${rfc850(in60)}`);
  t.equal(cooldownMs({ 'retry-after': imfFixdate(in60) }), 60_000, `IMF-fixdate ${imfFixdate(in60)}`);
  // asctime pads a one-digit day with a space (RFC 9110's own example, a minute later).
  const example = Date.UTC(1994, 10, 6, 8, 48, 37);
  t.equal(cooldownMs({ 'retry-after': 'Sun Nov  6 08:49:37 1994' }, example), 60_000, 'asctime-date with a space-padded day');
  t.equal(cooldownMs({ 'retry-after': 'Sunday, 06-Nov-94 08:49:37 GMT' }, example), 60_000, "rfc850-date's two-digit year of the last century");
  t.equal(cooldownMs({ 'retry-after': imfFixdate(new Date(NOW - 5000)) }), 0, 'a date past: usable again at once');
});

t.test('a Retry-After that is neither seconds nor an HTTP date gets credential_cooldown_seconds', async (t) => {
  for (const value of ['May 5', 'x 1', '-5', '1 2', 'Thu, 31 Feb 2026 20:09:07 GMT', 'Thu, 26 Nov 2026 25:09:07 GMT', 'Thu, 26 Nov 2026 20:09:07 PST', 'tomorrow', '0x10']) {
    t.equal(cooldownMs({ 'retry-after': value }), DEFAULT_MS, JSON.stringify(value));
  }
});

t.test('retry-after-ms is taken only when it is a number of milliseconds; else retry-after, else the default', async (t) => {
  t.equal(cooldownMs({ 'retry-after-ms': '250', 'retry-after': '7' }), 250, 'a valid retry-after-ms is preferred');
  t.equal(cooldownMs({ 'retry-after-ms': ' 1500.2 ' }), 1501, 'a fraction rounds up, blanks around it trimmed');
  t.equal(cooldownMs({ 'retry-after-ms': '  ', 'retry-after': '7' }), 7000, 'a blank retry-after-ms leaves retry-after');
  t.equal(cooldownMs({ 'retry-after-ms': '', 'retry-after': '7' }), 7000, 'an empty retry-after-ms leaves retry-after');
  t.equal(cooldownMs({ 'retry-after-ms': '0x10', 'retry-after': '7' }), 7000, 'a hexadecimal retry-after-ms is no hint');
  t.equal(cooldownMs({ 'retry-after-ms': '-5', 'retry-after': '7' }), 7000, 'a negative retry-after-ms is no hint');
  t.equal(cooldownMs({ 'retry-after-ms': '1e3', 'retry-after': '7' }), 7000, 'an exponent is no hint');
  t.equal(cooldownMs({ 'retry-after-ms': '0x10' }), DEFAULT_MS, 'with no retry-after: the default');
  t.equal(cooldownMs({ 'retry-after-ms': '  ' }), DEFAULT_MS, 'a blank one alone: the default');
});

t.test('concurrent verdicts on one credential: a bare 503 after a 429 with Retry-After: 3600 leaves the hour', async (t) => {
  const held: ServerResponse[] = [];
  let bothArrived: () => void = () => {};
  const arrived = new Promise<void>((resolve) => (bothArrived = resolve));
  const upstream = await startUpstream((req, res) => {
    held.push(res);
    if (held.length === 2) bothArrived();
    void req;
  });
  const gw = await startDataPlane();
  t.teardown(async () => {
    for (const res of held) res.socket?.destroy();
    await gw.close();
    await upstream.close();
  });
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-completions'] });
  const send = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  const answers = [send(), send()];
  await arrived;

  const before = Date.now();
  const [first, second] = held as [ServerResponse, ServerResponse];
  first.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3600' });
  first.end(JSON.stringify({ error: { message: 'slow down' } }));
  // The answer to the client comes after its verdict is written: the 503's verdict is the later one.
  const firstStatus = await Promise.race(answers.map(async (a) => (await a).status));
  t.equal(firstStatus, 429, "the first request gets the upstream's 429");
  second.writeHead(503, { 'content-type': 'application/json' });
  second.end(JSON.stringify({ error: { message: 'overloaded' } }));
  const statuses = (await Promise.all(answers)).map((r) => r.status).sort();
  const after = Date.now();
  t.same(statuses, [429, 503], 'each request gets its own upstream answer');

  const cooled = await credentialView(gw.store, group.id, credentials[0]!.id);
  t.equal(cooled.state, 'cooldown');
  const until = Date.parse(cooled.cooldown_until ?? '');
  t.ok(until >= before + 3_599_000 && until <= after + 3_601_000, `cooldown_until ${cooled.cooldown_until} is the Retry-After's hour, not the 503's default`);
});
