import t from 'tap';
import { Lockout, MAX_LOCKOUT_PEERS } from '../../src/auth/lockout.ts';
import { peerAddress } from '../../src/auth/peer-address.ts';
import { seedAccessKey, startGateway, type Gateway } from './support/gateway.ts';

const MINUTE = 60_000;

async function fail(gw: Gateway, localAddress?: string) {
  return gw.api('GET', '/api/groups', { token: 'not-the-key', ...(localAddress ? { localAddress } : {}) });
}

t.test('Counting: fewer than five failures within 30 minutes answer 401 and count', async (t) => {
  const gw = await startGateway(t);
  for (let i = 1; i <= 4; i++) {
    const res = await fail(gw);
    t.equal(res.status, 401, `failure ${i}`);
    t.equal(res.json.code, 'UNAUTHORIZED');
    gw.clock.advance(MINUTE);
  }
  t.equal((await gw.api('GET', '/api/groups')).status, 200, 'not locked after four');
});

t.test('Counting -> Locked: the fifth failure within 30 minutes locks the peer for 30 minutes', async (t) => {
  const gw = await startGateway(t);
  for (let i = 0; i < 4; i++) {
    await fail(gw);
    gw.clock.advance(7 * MINUTE);
  }
  const fifth = await fail(gw);
  t.equal(fifth.status, 429, 'the fifth failure (at 28 minutes) locks');
  t.equal(fifth.json.code, 'AUTH_LOCKED');
  t.equal(fifth.headers['retry-after'], '1800');
  t.equal(fifth.json.data.retry_after_seconds, 1800);
});

t.test('Locked: every management request within the lock period gets 429 with Retry-After', async (t) => {
  const gw = await startGateway(t);
  for (let i = 0; i < 5; i++) await fail(gw);
  gw.clock.advance(10 * MINUTE);
  const withAuthKey = await gw.api('GET', '/api/groups');
  t.equal(withAuthKey.status, 429, 'even the correct AUTH_KEY; the token is not checked');
  t.equal(withAuthKey.headers['retry-after'], String(20 * 60));
  t.equal(withAuthKey.json.data.retry_after_seconds, 20 * 60);
  const noToken = await gw.api('GET', '/api/auth/session', { token: undefined });
  t.equal(noToken.status, 429, 'without a token');
  const unknownRoute = await gw.api('GET', '/api/nowhere');
  t.equal(unknownRoute.status, 429, 'on an unknown route');
  const zh = await gw.api('GET', '/api/groups', { language: 'zh-CN' });
  t.equal(zh.json.message, '此地址认证失败次数过多，请稍后再试。');
  gw.clock.advance(20 * MINUTE - 1000);
  const lastSecond = await gw.api('GET', '/api/groups');
  t.equal(lastSecond.status, 429);
  t.equal(lastSecond.headers['retry-after'], '1');
  gw.clock.advance(1000);
  t.equal((await gw.api('GET', '/api/groups')).status, 200, 'unlocked after 30 minutes');
  t.equal((await fail(gw)).status, 401, 'and counting starts again from zero');
});

t.test('Counting: a success with the correct AUTH_KEY clears the failure count', async (t) => {
  const gw = await startGateway(t);
  for (let i = 0; i < 4; i++) await fail(gw);
  t.equal((await gw.api('GET', '/api/groups')).status, 200);
  for (let i = 0; i < 4; i++) t.equal((await fail(gw)).status, 401, `failure ${i + 1} after the clear`);
  t.equal((await fail(gw)).status, 429, 'the fifth after the clear locks');
});

t.test('a success with an AccessKey does not clear the count', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  for (let i = 0; i < 4; i++) await fail(gw);
  t.equal((await gw.api('GET', '/api/auth/session', { token: key.value })).status, 200);
  t.equal((await fail(gw)).status, 429, 'still the fifth failure');
});

t.test('failures older than 30 minutes fall out of the window', async (t) => {
  const gw = await startGateway(t);
  for (let i = 0; i < 4; i++) await fail(gw);
  gw.clock.advance(30 * MINUTE);
  t.equal((await fail(gw)).status, 401, 'the earlier four are outside the window');
  for (let i = 0; i < 3; i++) await fail(gw);
  t.equal((await fail(gw)).status, 429, 'five within the window lock');
});

t.test('what counts as a failure', async (t) => {
  const gw = await startGateway(t);
  const key = await seedAccessKey(gw);
  await gw.api('PATCH', `/api/access-keys/${key.id}`, { body: { enabled: false } });
  for (let i = 0; i < 10; i++) t.equal((await gw.api('GET', '/api/groups', { token: undefined })).status, 401);
  t.equal((await gw.api('GET', '/api/groups')).status, 200, 'requests without Authorization guess nothing and are not counted');
  t.equal((await gw.api('GET', '/api/groups', { token: undefined, headers: { Authorization: 'Basic YTpi' } })).status, 401);
  t.equal((await gw.api('GET', '/api/groups', { token: key.value })).status, 401, 'a disabled AccessKey is not a valid one');
  await fail(gw);
  await fail(gw);
  t.equal((await fail(gw)).status, 429, 'a malformed header and a disabled key counted with the rest');
});

t.test('other peers are unaffected; the lock is per direct peer address', async (t) => {
  const gw = await startGateway(t);
  for (let i = 0; i < 5; i++) await fail(gw, '127.0.0.1');
  t.equal((await gw.api('GET', '/api/groups', { localAddress: '127.0.0.1' })).status, 429);
  const other = await gw.api('GET', '/api/groups', { localAddress: '127.0.0.2' });
  t.equal(other.status, 200, '127.0.0.2 is another peer');
  t.equal((await fail(gw, '127.0.0.2')).status, 401, 'and has its own count');
});

t.test('X-Forwarded-For is believed only from a configured trusted proxy', async (t) => {
  const gw = await startGateway(t);
  for (let i = 0; i < 5; i++) await gw.api('GET', '/api/groups', { token: 'wrong', headers: { 'X-Forwarded-For': `10.0.0.${i}` } });
  t.equal((await gw.api('GET', '/api/groups')).status, 429, 'without a trusted-proxy list the header is ignored');
  gw.clock.advance(30 * MINUTE);
  const saved = await gw.api('PUT', '/api/settings', { body: { trusted_proxies: ['127.0.0.0/8'] } });
  t.equal(saved.status, 200);
  for (let i = 0; i < 5; i++) await gw.api('GET', '/api/groups', { token: 'wrong', headers: { 'X-Forwarded-For': '203.0.113.9' } });
  const sameClient = await gw.api('GET', '/api/groups', { headers: { 'X-Forwarded-For': '203.0.113.9' } });
  t.equal(sameClient.status, 429, 'the forwarded client is locked');
  const otherClient = await gw.api('GET', '/api/groups', { headers: { 'X-Forwarded-For': '203.0.113.10' } });
  t.equal(otherClient.status, 200, 'another client behind the same proxy is not');
});

t.test('Lockout state table on its own, with an injected clock', async (t) => {
  let now = 0;
  const lockout = new Lockout(() => now);
  for (let i = 0; i < 4; i++) t.same(lockout.recordFailure('a'), { locked: false });
  t.equal(lockout.failureCount('a'), 4);
  t.same(lockout.recordFailure('a'), { locked: true, retryAfterSeconds: 1800 });
  t.same(lockout.status('b'), { locked: false }, 'another peer');
  lockout.clear('a');
  t.equal(lockout.status('a').locked, true, 'a success cannot clear an active lock');
  now += 30 * MINUTE;
  t.same(lockout.status('a'), { locked: false });
  t.equal(lockout.failureCount('a'), 0);
});

t.test('failures from more distinct peers than the table holds keep it bounded; the newest lock stands', async (t) => {
  let now = 0;
  const lockout = new Lockout(() => now);
  for (let i = 0; i < MAX_LOCKOUT_PEERS + 1000; i++) lockout.recordFailure(`2001:db8::${i.toString(16)}`);
  t.ok(lockout.diagnosticSize() <= MAX_LOCKOUT_PEERS, 'a flood of addresses within the window stops at the bound');
  t.equal(lockout.failureCount('2001:db8::0'), 0, 'the peer whose last failure is oldest went');
  t.equal(lockout.failureCount(`2001:db8::${(MAX_LOCKOUT_PEERS + 999).toString(16)}`), 1, 'the newest is kept');
  for (let i = 0; i < 5; i++) lockout.recordFailure('203.0.113.9');
  lockout.recordFailure('2001:db8::ffff:ffff');
  t.equal(lockout.status('203.0.113.9').locked, true, 'a peer locked since the flood stays locked');
  now += 30 * MINUTE;
  lockout.recordFailure('198.51.100.1');
  t.equal(lockout.diagnosticSize(), 1, 'entries whose window and lock have passed go at the next failure');
});

// The table holds MAX_LOCKOUT_PEERS + 1000 failures after one eviction of the oldest eighth.
t.test('an eviction takes the peers whose last failures are oldest, and no live lock', async (t) => {
  const lockout = new Lockout(() => 0);
  for (let i = 0; i < 5; i++) lockout.recordFailure('203.0.113.9');
  lockout.recordFailure('198.51.100.7');
  for (let i = 0; i < MAX_LOCKOUT_PEERS + 1000; i++) {
    // Past the oldest eighth by then: kept by this failure, not its first.
    if (i === MAX_LOCKOUT_PEERS / 4) lockout.recordFailure('198.51.100.7');
    lockout.recordFailure(`2001:db8::${i.toString(16)}`);
  }
  t.ok(lockout.diagnosticSize() <= MAX_LOCKOUT_PEERS, 'bounded');
  t.equal(lockout.failureCount('2001:db8::0'), 0, 'the oldest failure went');
  t.equal(lockout.failureCount('198.51.100.7'), 2, 'a peer that failed again is as recent as its last failure');
  t.equal(lockout.status('203.0.113.9').locked, true, 'a lock set before a flood from other addresses outlasts it');
});

t.test('a table of locks alone stays bounded, the oldest locks going, and a peer failing then is still locked at its fifth failure', async (t) => {
  const lockout = new Lockout(() => 0);
  const locked = (i: number) => `2001:db8:2::${i.toString(16)}`;
  for (let i = 0; i <= MAX_LOCKOUT_PEERS; i++) for (let f = 0; f < 5; f++) lockout.recordFailure(locked(i));
  t.ok(lockout.diagnosticSize() <= MAX_LOCKOUT_PEERS, 'bounded');
  t.equal(lockout.status(locked(0)).locked, false, 'the oldest lock went');
  t.equal(lockout.status(locked(MAX_LOCKOUT_PEERS)).locked, true, 'the peer that failed past the bound is locked: its own entry was not the one evicted');
});

t.test('peer address resolution', async (t) => {
  t.equal(peerAddress('::ffff:127.0.0.1', undefined, []), '127.0.0.1', 'IPv4-mapped addresses are normalized');
  t.equal(peerAddress('10.0.0.1', '1.2.3.4', []), '10.0.0.1', 'no trusted proxies: socket address');
  t.equal(peerAddress('10.0.0.1', '1.2.3.4', ['10.0.0.0/8']), '1.2.3.4');
  t.equal(peerAddress('10.0.0.1', '6.6.6.6, 1.2.3.4, 10.0.0.2', ['10.0.0.0/8']), '1.2.3.4', 'rightmost untrusted hop; a client cannot spoof by prepending');
  t.equal(peerAddress('192.168.1.1', '1.2.3.4', ['10.0.0.0/8']), '192.168.1.1', 'an untrusted peer cannot forward');
  t.equal(peerAddress('10.0.0.1', 'garbage', ['10.0.0.0/8']), '10.0.0.1');
});

t.test('a hop with its port, as Azure Application Gateway writes X-Forwarded-For, is its address', async (t) => {
  // Its header is a list of IP:port: read as no address, every client counted as the proxy,
  // and one client's five failures locked out all of them.
  t.equal(peerAddress('10.0.0.1', '203.0.113.9:51234', ['10.0.0.0/8']), '203.0.113.9');
  t.equal(peerAddress('10.0.0.1', '[2001:db8::7]:51234', ['10.0.0.0/8']), '2001:db8::7');
  t.equal(peerAddress('10.0.0.1', '[2001:db8::7]', ['10.0.0.0/8']), '2001:db8::7', 'brackets without a port');
  t.equal(peerAddress('10.0.0.1', '2001:db8::7', ['10.0.0.0/8']), '2001:db8::7', 'a bare IPv6 address keeps its last group');
  t.equal(peerAddress('10.0.0.1', '6.6.6.6, 203.0.113.9:443, 10.0.0.2:80', ['10.0.0.0/8']), '203.0.113.9', 'a trusted hop with a port is still trusted');
  t.equal(peerAddress('10.0.0.1', '203.0.113.9:99999', ['10.0.0.0/8']), '10.0.0.1', 'no port number: no address');
  const gw = await startGateway(t);
  t.equal((await gw.api('PUT', '/api/settings', { body: { trusted_proxies: ['127.0.0.0/8'] } })).status, 200);
  for (let i = 0; i < 5; i++) await gw.api('GET', '/api/groups', { token: 'wrong', headers: { 'X-Forwarded-For': `203.0.113.9:${40000 + i}` } });
  t.equal((await gw.api('GET', '/api/groups', { headers: { 'X-Forwarded-For': '203.0.113.9:40100' } })).status, 429, 'the client is locked, from any port');
  t.equal((await gw.api('GET', '/api/groups', { headers: { 'X-Forwarded-For': '203.0.113.10:40000' } })).status, 200, 'another client behind the proxy is not');
});

