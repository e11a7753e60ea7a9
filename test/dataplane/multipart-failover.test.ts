import t from 'tap';
import type { Gateway } from './helpers/data-plane-harness.ts';
import { closedPortUrl, createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { gateway } from './helpers/gateway-per-test.ts';
import { spoolEmptied } from './helpers/spool-directory.ts';
import { secretOf, status, upstreamBySecret } from './helpers/upstream-behaviours.ts';

// Issue 4 item 4: an operation that is not replay safe (an image edit, a transcription) moves
// to the next credential or Group only when the upstream provably rejected the request before
// processing it (401, 403, 429, or no connection made). A form is spooled, so that the next
// attempt sends the same bytes, with the model its own Group maps to.

const BOUNDARY = 'XyZfailover';
const FILE = Buffer.alloc(300_000, 0x37);

/** A form as the official SDKs send it: the file first, then the model and the other fields. */
function form(model: string, fileField: string): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${fileField}"; filename="in.png"\r\nContent-Type: image/png\r\n\r\n`),
    FILE,
    Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na red square\r\n--${BOUNDARY}--\r\n`),
  ]);
}

const ROUTES = [
  { path: '/v1/images/edits', channel: 'ch09', protocol: 'x-images', fileField: 'image' },
  { path: '/v1/audio/transcriptions', channel: 'ch03', protocol: 'x-suite', fileField: 'file' },
] as const;

/** Two Groups serving the route's `img`, each mapping it to a model of its own: `first` is tried first. */
async function twoGroups(gw: Gateway, route: (typeof ROUTES)[number], first: string, second: string) {
  await seedGroup(gw.store, { channel: route.channel, baseUrl: second, models: [{ external: 'img', upstream: 'vendor-b' }], secrets: ['sk-b'], priority: 1 });
  await seedGroup(gw.store, { channel: route.channel, baseUrl: first, models: [{ external: 'img', upstream: 'vendor-a' }], secrets: ['sk-a'], priority: 10 });
  return createKey(gw.store, { protocols: [route.protocol], record_request_body: true });
}

function post(gw: Gateway, route: (typeof ROUTES)[number], keyValue: string, body: Buffer): Promise<Response> {
  return fetch(`${gw.url}${route.path}`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
}

for (const route of ROUTES) {
  for (const rejection of [429, 401]) {
    t.test(`${route.path}: a ${rejection} from the first Group is sent again to the second, byte for byte with its own model`, async (t) => {
      const upstream = await upstreamBySecret(t, { 'sk-a': status(rejection, { 'retry-after': '60' }) });
      const gw = await gateway(t);
      const { keyValue } = await twoGroups(gw, route, upstream.url, upstream.url);
      const sent = form('img', route.fileField);
      const res = await post(gw, route, keyValue, sent);
      t.equal(res.status, 200);
      t.same(await res.json(), { ok: true });
      t.same(upstream.requests.map(secretOf), ['sk-a', 'sk-b'], 'the first Group, then the second');
      const [first, second] = upstream.requests;
      t.ok(first!.body.equals(form('vendor-a', route.fileField)), "the first attempt got the form with its Group's model");
      t.ok(second!.body.equals(form('vendor-b', route.fileField)), "the second got every byte again, with its Group's model");
      for (const seen of upstream.requests) t.equal(Number(seen.headers['content-length']), seen.body.length, 'an exact content-length');
      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, { status: 200, attempt_count: 2, attempts: [{ error_code: `upstream_${rejection}` }, { status: 200 }] });
      t.match(record.request_body, { state: 'recorded', original_bytes: sent.length });
      await spoolEmptied(gw);
    });
  }

  t.test(`${route.path}: a first Group that cannot be reached passes the form to the second`, async (t) => {
    const upstream = await upstreamBySecret(t, {});
    const gw = await gateway(t);
    const { keyValue } = await twoGroups(gw, route, await closedPortUrl(), upstream.url);
    const res = await post(gw, route, keyValue, form('img', route.fileField));
    t.equal(res.status, 200);
    t.same(upstream.requests.map(secretOf), ['sk-b'], 'served by the second Group');
    t.ok(upstream.requests[0]!.body.equals(form('vendor-b', route.fileField)), "the whole form, with the second Group's model");
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 200, attempt_count: 2, attempts: [{ status: null, error_code: 'upstream_connect_failed' }, { status: 200 }] });
    await spoolEmptied(gw);
  });

  t.test(`${route.path}: a 500 from the first Group is not sent again (the upstream may have processed it)`, async (t) => {
    const upstream = await upstreamBySecret(t, { 'sk-a': status(500) });
    const gw = await gateway(t);
    const { keyValue } = await twoGroups(gw, route, upstream.url, upstream.url);
    const res = await post(gw, route, keyValue, form('img', route.fileField));
    t.equal(res.status, 500);
    t.match(await res.json(), { error: { message: 'upstream says 500' } });
    t.same(upstream.requests.map(secretOf), ['sk-a'], 'the second Group is never tried');
    const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
    t.match(record, { status: 500, attempt_count: 1 });
    await spoolEmptied(gw);
  });
}
