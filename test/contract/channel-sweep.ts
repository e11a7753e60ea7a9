import type { Test } from 'tap';
import { OPERATIONS, PROTOCOL_IDS, type ChannelId } from '../../src/generated/index.ts';
import { startUpstreamAndDataPlane, type RecordedUpstreamRequest } from '../dataplane/helpers/data-plane-harness.ts';
import { HTTP_OPERATIONS, clientAuthHeaders, createKey, seedGroup, splitUrl, withTimeout, type Operation } from '../dataplane/helpers/dataplane-scenarios.ts';
import { clientBody, clientPath, method, nonStreamReply, upstreamPath, type NonStreamReply } from '../dataplane/helpers/native-requests.ts';
import { connect, startWsUpstream, upgradeAnswer } from '../dataplane/helpers/ws-upstream.ts';
import { sweepCases, type Expected, type SweepCase } from './expected-outcome.ts';

// Every operation of the generated OPERATIONS table sent to one channel through the real data
// plane, each checked against what the manifest cell declares (expected-outcome.ts).

const SECRET = 'sk-contract-http-5f1e2d';
const WS_SECRET = 'sk-contract-ws-7a9b3c';
const WS_OPERATIONS: Operation[] = Object.values(OPERATIONS).filter((op) => op.body === 'websocket');

interface Planned {
  op: Operation;
  cases: SweepCase[];
}

const mappings = (planned: Planned[]) =>
  planned.flatMap(({ op, cases }) => (op.model === 'none' ? [] : cases.map((c) => ({ external: c.external, upstream: c.upstream }))));

/** The reason code of a gateway error body in any of the three error styles. */
function reasonCodeOf(body: string): string | undefined {
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; details?: { reason?: string }[] } }).error;
    return typeof error?.code === 'string' ? error.code : error?.details?.[0]?.reason;
  } catch {
    return undefined;
  }
}

/** Whether the secret went upstream at all: in a header (any scheme) or the query. */
function carriesSecret(seen: { url?: string; headers: RecordedUpstreamRequest['headers'] }, secret: string): boolean {
  const headerValues = Object.values(seen.headers).flat().join('\n');
  return headerValues.includes(secret) || decodeURIComponent(seen.url ?? '').includes(secret);
}

/** The model a forwarded body names (JSON member or form field). */
async function bodyModel(seen: RecordedUpstreamRequest, op: Operation): Promise<unknown> {
  if (op.body === 'multipart') {
    const form = await new Response(new Uint8Array(seen.body), { headers: { 'content-type': String(seen.headers['content-type']) } }).formData();
    return form.get('model');
  }
  return (JSON.parse(seen.body.toString('utf8')) as Record<string, unknown>)['model'];
}

/**
 * One gateway for the channel: a Group (priority 1) to an HTTP upstream mapping the HTTP
 * operations' models, and a Group (priority 0) to a WebSocket upstream mapping only the
 * WebSocket operations' models, so every request reaches exactly one of them.
 */
export async function sweepChannel(t: Test, channel: ChannelId): Promise<void> {
  let reply: NonStreamReply | undefined;
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    const r = reply ?? { status: 500, contentType: 'text/plain', body: Buffer.from('no answer planned') };
    res.writeHead(r.status, { 'content-type': r.contentType, 'content-length': r.body.length });
    res.end(r.body);
  });
  const wsUpstream = await startWsUpstream();
  t.teardown(() => wsUpstream.close());

  const http = HTTP_OPERATIONS.map((op) => ({ op, cases: sweepCases(channel, op) }));
  const ws = WS_OPERATIONS.map((op) => ({ op, cases: sweepCases(channel, op) }));
  await seedGroup(gw.store, { channel, baseUrl: upstream.url, models: mappings(http), secrets: [SECRET], priority: 1 });
  await seedGroup(gw.store, { channel, baseUrl: wsUpstream.url, models: mappings(ws), secrets: [WS_SECRET], priority: 0 });
  const { keyValue } = await createKey(gw.store, { protocols: [...PROTOCOL_IDS] });

  for (const { op, cases } of http) {
    for (const c of cases) {
      await t.test(`${op.id} (${op.capability} ${c.label})`, async (t) => {
        reply = nonStreamReply(op);
        const before = upstream.requests.length;
        const { body, headers } = clientBody(op, false, c.external);
        const res = await fetch(`${gw.url}${clientPath(op, c.external)}`, {
          method: method(op),
          headers: { ...clientAuthHeaders(op.protocol, keyValue), ...headers },
          ...(body !== undefined ? { body } : {}),
        });
        const bytes = Buffer.from(await res.arrayBuffer());
        const sent = upstream.requests.slice(before);
        if (!c.expected.native) return checkRefusal(t, c.expected, res.status, bytes.toString('utf8'), sent.length);
        t.equal(sent.length, 1, 'exactly one upstream request', { gatewayAnswered: res.status, body: bytes.toString('utf8') });
        const seen = sent[0];
        if (!seen) return;
        t.equal(seen.method, method(op), 'method');
        t.equal(splitUrl(seen.url).path, upstreamPath(op, c.upstream), 'upstream path');
        t.ok(carriesSecret(seen, SECRET), "the Group's upstream secret is sent", { headers: seen.headers, url: seen.url });
        if (op.model === 'body') t.equal(await bodyModel(seen, op), c.upstream, 'the mapped upstream model in the body');
        if (op.model === 'query') t.equal(splitUrl(seen.url).query.get('model'), c.upstream, 'the mapped upstream model in the query');
        t.equal(res.status, reply.status, "the upstream's status");
        t.ok(bytes.equals(reply.body), "the upstream's body byte for byte", { got: bytes.toString('utf8') });
      });
    }
  }

  for (const { op, cases } of ws) {
    for (const c of cases) {
      await t.test(`${op.id} upgrade (${op.capability} ${c.label})`, async (t) => {
        const query = op.model === 'query' ? `model=${encodeURIComponent(c.external)}&` : '';
        const url = `${gw.url.replace('http', 'ws')}${clientPath(op, c.external)}?${query}key=${keyValue}`;
        const before = wsUpstream.seen.length;
        if (!c.expected.native) {
          const answer = await withTimeout(upgradeAnswer(url), 5000, `the refusal of ${op.id}`);
          return checkRefusal(t, c.expected, answer.status, answer.body, wsUpstream.seen.length - before);
        }
        const client = await withTimeout(connect(url), 5000, `the ${op.id} session to open`);
        client.terminate();
        const sent = wsUpstream.seen.slice(before);
        t.equal(sent.length, 1, 'the upgrade reached the upstream once');
        const seen = sent[0];
        if (!seen) return;
        t.equal(splitUrl(seen.url ?? '').path, upstreamPath(op, c.upstream), 'upstream path');
        t.ok(carriesSecret(seen, WS_SECRET), "the Group's upstream secret is sent", { headers: seen.headers, url: seen.url });
        if (op.model === 'query') t.equal(splitUrl(seen.url ?? '').query.get('model'), c.upstream, 'the mapped upstream model in the query');
      });
    }
  }
}

function checkRefusal(t: Test, expected: Exclude<Expected, { native: true }>, status: number, body: string, upstreamRequests: number): void {
  t.equal(upstreamRequests, 0, 'no upstream request');
  t.equal(status, expected.status, 'refusal status');
  t.equal(reasonCodeOf(body), expected.code, `refused as ${expected.code}`, { body });
}
