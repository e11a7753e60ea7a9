import t from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { chatBody, waitForLog } from './helpers/dataplane-scenarios.ts';

// The upstream credential never reaches a client (issue 4): a redirect echoing the key in its
// location usually repeats that location in its body (Express's default `Found. Redirecting to
// <url>`), so the body of an answer from 300 to 399 is masked as an error answer's is. A 2xx
// body is not scanned (data-plane.md step 9).

const SECRET = 'sk-proj-REDIRECTSECRET0123456789abcdef';
// What a data-plane client sees (maskedForClients): `***`, then the secret's last four characters when it has 24 or more.
const MASKED = '***cdef';
const SECOND = `${SECRET}-second`;
const SECOND_MASKED = '***cond';

/** The upstream's answer: the key it got in the location, in the body (percent-encoded and as it is) and in a header. */
function redirect(key: string) {
  const location = `https://relay.example/v1/chat/completions?key=${encodeURIComponent(key)}`;
  return { location, body: `Found. Redirecting to ${location} (key ${key})` };
}

for (const status of [301, 302, 307, 308]) {
  t.test(`a ${status} echoing the secret in location and body: masked in both, status and other headers as sent, no failover`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
      const { location, body } = redirect(String(req.headers.authorization).replace(/^Bearer /, ''));
      res.writeHead(status, { location, 'content-type': 'text/plain; charset=utf-8', 'x-relay': 'kept', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [SECRET, SECOND] });
    // Round-robin over two credentials: each one's first answer is taken by the failover loop
    // (its secret read from the store), its second by the path for a cached secret.
    for (let n = 1; n <= 4; n++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', redirect: 'manual', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
      const body = await res.text();
      const sent = String(upstream.requests.at(-1)?.headers.authorization).replace(/^Bearer /, '');
      t.ok(sent.startsWith(SECRET), `${n}: the upstream got a credential it echoes`);
      t.equal(upstream.requests.length, n, `${n}: a redirect is not a failover status: one attempt`);
      t.equal(res.status, status, `${n}: status`);
      const expected = redirect(sent === SECRET ? MASKED : SECOND_MASKED);
      t.equal(res.headers.get('location'), expected.location, `${n}: location masked`);
      t.equal(body, expected.body, `${n}: body masked, every occurrence and form`);
      t.equal(res.headers.get('x-relay'), 'kept', `${n}: other headers as sent`);
      t.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8', `${n}: content-type as sent`);
      const everything = [...res.headers].map(([name, value]) => `${name}: ${value}`).join('\n') + body;
      t.notOk(everything.includes(SECRET) || everything.includes(encodeURIComponent(SECRET)), `${n}: the secret in no header and not in the body`);
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status, attempts: [{ status, error_code: null }] }, `${n}: recorded as the redirect it is, not an error`);
    }
  });
}

t.test('a 200 echoing the secret in its body: the body goes as sent, with its content-length', async (t) => {
  const body = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [], echo: SECRET });
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [SECRET] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-length'), String(Buffer.byteLength(body)), 'length as sent: not rewritten');
  t.equal(await res.text(), body, 'a success body is not scanned');
});
