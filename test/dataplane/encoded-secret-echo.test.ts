import t from 'tap';
import { seedRoute, startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { chatBody, completionJson } from './helpers/dataplane-scenarios.ts';

// An upstream that echoes its key through an ordinary encoder (a JSON encoder writes `"` as `\"`
// and `\` as `\\`; Go writes `<>&` as \u00XX; a form encoder writes `~` as %7E and a space as
// `+`; Basic auth carries it in base64) still never shows it to the client: each is masked,
// in the body of an error and in every header, to `***` and the key's last four characters
// (the key is a multiple of 3 bytes long, so its base64 has no padding and is masked whole).
const KEY = 'sk-quote"back\\slash&<up>=~ 123456789abcdefXYZ';
const MASKED = '***fXYZ';
const ECHOES: [name: string, echoed: string][] = [
  ['JSON.stringify', JSON.stringify(KEY).slice(1, -1)],
  ['Go encoding/json', 'sk-quote\\"back\\\\slash\\u0026\\u003cup\\u003e=~ 123456789abcdefXYZ'],
  ['URLSearchParams', new URLSearchParams({ k: KEY }).toString().slice(2)],
  ['base64', Buffer.from(KEY).toString('base64')],
];

for (const status of [200, 401]) {
  t.test(`a ${status} echoing the key JSON-escaped, as Go, form-encoded and in base64: masked in headers${status === 401 ? ' and body' : ''}`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
      const key = String(req.headers.authorization).replace(/^Bearer /, '');
      const echoes = ECHOES.map(([, echoed]) => echoed);
      res.writeHead(status, { 'content-type': 'application/json', 'x-echo-json': JSON.stringify(key), ...Object.fromEntries(echoes.map((e, i) => [`x-echo-${i}`, e])) });
      res.end(status === 200 ? completionJson('vendor-chat') : `{"error":{"message":"Invalid key ${echoes.join(' ')}"}}`);
    });
    const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [KEY] });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
    t.equal(res.status, status);
    t.equal(upstream.requests.at(-1)?.headers.authorization, `Bearer ${KEY}`, 'the upstream got the key it echoes');
    t.equal(res.headers.get('x-echo-json'), `"${MASKED}"`, 'JSON.stringify in a header');
    ECHOES.forEach(([name], i) => t.equal(res.headers.get(`x-echo-${i}`), MASKED, `${name} in a header`));
    const body = await res.text();
    if (status === 401) t.equal(body, `{"error":{"message":"Invalid key ${ECHOES.map(() => MASKED).join(' ')}"}}`, 'every echo in the body masked');
    else t.equal(body, completionJson('vendor-chat'), 'the 200 body as sent');
  });
}

t.test("an error answer in a coding the gateway cannot decode: the gateway's message does not quote the upstream's content-encoding", async (t) => {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    const key = String(req.headers.authorization).replace(/^Bearer /, '');
    res.writeHead(400, { 'content-type': 'application/json', 'content-encoding': `x-${key}` }).end('{"error":"x"}');
  });
  const key = 'sk-upstreamSECRET0123456789abcdef';
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], protocols: ['x-completions'], upstreamKeys: [key] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' }, body: chatBody('team-chat') });
  t.equal(res.status, 502);
  const body = await res.text();
  t.notOk(body.toLowerCase().includes(key.toLowerCase()), 'no part of the key');
  t.match(JSON.parse(body), { error: { code: 'upstream_unreachable', message: /an unsupported content-encoding/ } });
});
