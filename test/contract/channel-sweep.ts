import type { Test } from 'tap';
import { CHANNELS, OPERATIONS, PROTOCOL_IDS, type ChannelId, type CredentialHeader } from '../../src/generated/index.ts';
import { startUpstreamAndDataPlane, type RecordedUpstreamRequest } from '../dataplane/helpers/data-plane-harness.ts';
import { HTTP_OPERATIONS, clientAuthHeaders, createKey, seedGroup, splitUrl, withTimeout, type Operation } from '../dataplane/helpers/dataplane-scenarios.ts';
import { clientBody, clientPath, method, nonStreamReply, upstreamPath, type NonStreamReply } from '../dataplane/helpers/native-requests.ts';
import { connect, startWsUpstream, upgradeAnswer } from '../dataplane/helpers/ws-upstream.ts';
import { sweepCases, uncredentialedReason, type Expected, type SweepCase } from './expected-outcome.ts';

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

/** Whether the secret went upstream at all: in a header (any scheme) or the URL. */
function carriesSecret(seen: { url?: string; headers: RecordedUpstreamRequest['headers'] }, secret: string): boolean {
  const headerValues = Object.values(seen.headers).flat().join('\n');
  return headerValues.includes(secret) || decodeURIComponent(seen.url ?? '').includes(secret);
}

const HEADER_OF: Readonly<Record<CredentialHeader, string>> = { bearer: 'authorization', 'x-api-key': 'x-api-key', 'x-goog-api-key': 'x-goog-api-key' };
/** Each protocol's own convention, as docs/data-plane.md step 7 states it: messages style in x-api-key, generate style and x-live in x-goog-api-key, bearer otherwise. */
const CONVENTION: Readonly<Record<string, readonly CredentialHeader[]>> = { 'x-messages': ['x-api-key'], 'x-generate': ['x-goog-api-key'], 'x-embeddings': ['x-goog-api-key'], 'x-live': ['x-goog-api-key'] };

/**
 * The upstream credential in exactly the headers the channel's manifest declares for the
 * protocol (its `credential_headers`, else the protocol's own convention), and in no other.
 */
function checkCredentialHeaders(t: Test, seen: { headers: RecordedUpstreamRequest['headers'] }, channel: ChannelId, protocol: string, secret: string): void {
  const declared = CHANNELS[channel].credential_headers?.[protocol] ?? CONVENTION[protocol] ?? ['bearer'];
  for (const [header, name] of Object.entries(HEADER_OF) as [CredentialHeader, string][]) {
    if (declared.includes(header)) t.equal(seen.headers[name], header === 'bearer' ? `Bearer ${secret}` : secret, `the secret in ${name}, as the manifest declares for ${protocol}`);
    else t.equal(seen.headers[name], undefined, `no ${name} upstream`);
  }
}

/** The model a forwarded body names (JSON member or form field). */
async function bodyModel(seen: RecordedUpstreamRequest, op: Operation): Promise<unknown> {
  if (op.body === 'multipart') {
    const form = await new Response(new Uint8Array(seen.body), { headers: { 'content-type': String(seen.headers['content-type']) } }).formData();
    return form.get('model');
  }
  return (JSON.parse(seen.body.toString('utf8')) as Record<string, unknown>)['model'];
}

/** What one channel's sweep sent: every operation id with a case, and how its native cases went. */
export interface SweepSummary {
  operations: Set<string>;
  /** Native cases forwarded to the upstream. */
  forwarded: number;
  /** Native cases refused as `no_available_credential`, the channel's Group having no credential. */
  uncredentialed: number;
  /** Cases sent to either side of an N/C cell. */
  modelDependent: { native: number; converted: number };
}

/**
 * One gateway for the channel: a Group (priority 1) to an HTTP upstream mapping the HTTP
 * operations' models, and a Group (priority 0) to a WebSocket upstream mapping only the
 * WebSocket operations' models, so every request reaches exactly one of them. A channel with
 * no static credential kind gets both Groups without credentials (uncredentialedReason).
 */
export async function sweepChannel(t: Test, channel: ChannelId): Promise<SweepSummary> {
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
  const planned = [...http, ...ws];
  t.same(planned.map(({ op }) => op.id).sort(), Object.keys(OPERATIONS).sort(), 'the HTTP and WebSocket cases together cover every operation of OPERATIONS');
  t.same(planned.filter(({ cases }) => cases.length === 0).map(({ op }) => op.id), [], 'every operation has a case');

  const uncredentialed = uncredentialedReason(channel);
  if (uncredentialed !== undefined) t.comment(`${uncredentialed}; native cases must be refused as no_available_credential`);
  const credentials = (secret: string) => (uncredentialed === undefined ? { secrets: [secret] } : { secrets: [], withoutCredentials: true });
  await seedGroup(gw.store, { channel, baseUrl: upstream.url, models: mappings(http), ...credentials(SECRET), priority: 1 });
  await seedGroup(gw.store, { channel, baseUrl: wsUpstream.url, models: mappings(ws), ...credentials(WS_SECRET), priority: 0 });
  const { keyValue } = await createKey(gw.store, { protocols: [...PROTOCOL_IDS] });

  const summary: SweepSummary = { operations: new Set(), forwarded: 0, uncredentialed: 0, modelDependent: { native: 0, converted: 0 } };
  const count = (c: SweepCase) => {
    if (c.side !== undefined) summary.modelDependent[c.side]++;
  };
  /** Upstream requests of both upstreams since the mark, whichever the case was meant for. */
  const mark = () => {
    const httpBefore = upstream.requests.length;
    const wsBefore = wsUpstream.seen.length;
    return () => ({ http: upstream.requests.slice(httpBefore), ws: wsUpstream.seen.slice(wsBefore) });
  };
  const refusal = (t: Test, expected: Exclude<Expected, { native: true }>, status: number, body: string, sent: { http: unknown[]; ws: unknown[] }) => {
    if (expected.code === 'no_available_credential') summary.uncredentialed++;
    checkRefusal(t, expected, status, body, sent.http.length + sent.ws.length);
  };

  for (const { op, cases } of http) {
    for (const c of cases) {
      count(c);
      await t.test(`${op.id} (${op.capability} ${c.label})`, async (t) => {
        reply = nonStreamReply(op);
        const since = mark();
        const { body, headers } = clientBody(op, false, c.external);
        const res = await fetch(`${gw.url}${clientPath(op, c.external)}`, {
          method: method(op),
          headers: { ...clientAuthHeaders(op.protocol, keyValue), ...headers },
          ...(body !== undefined ? { body } : {}),
        });
        const bytes = Buffer.from(await res.arrayBuffer());
        // Answered: the operation was sent, not only planned.
        summary.operations.add(op.id);
        const sent = since();
        if (!c.expected.native) return refusal(t, c.expected, res.status, bytes.toString('utf8'), sent);
        summary.forwarded++;
        t.equal(sent.http.length, 1, 'exactly one upstream request', { gatewayAnswered: res.status, body: bytes.toString('utf8') });
        t.equal(sent.ws.length, 0, 'nothing reached the WebSocket upstream');
        const seen = sent.http[0];
        if (!seen) return;
        t.equal(seen.method, method(op), 'method');
        t.equal(splitUrl(seen.url).path, upstreamPath(op, c.upstream), 'upstream path');
        t.ok(carriesSecret(seen, SECRET), "the Group's upstream secret is sent", { headers: seen.headers, url: seen.url });
        checkCredentialHeaders(t, seen, channel, op.protocol, SECRET);
        t.notOk(carriesSecret(seen, keyValue), "the client's AccessKey is not sent upstream", { headers: seen.headers, url: seen.url });
        if (op.model === 'body') t.equal(await bodyModel(seen, op), c.upstream, 'the mapped upstream model in the body');
        if (op.model === 'query') t.equal(splitUrl(seen.url).query.get('model'), c.upstream, 'the mapped upstream model in the query');
        t.equal(res.status, reply.status, "the upstream's status");
        t.ok(bytes.equals(reply.body), "the upstream's body byte for byte", { got: bytes.toString('utf8') });
      });
    }
  }

  for (const { op, cases } of ws) {
    for (const c of cases) {
      count(c);
      await t.test(`${op.id} upgrade (${op.capability} ${c.label})`, async (t) => {
        const query = op.model === 'query' ? `model=${encodeURIComponent(c.external)}&` : '';
        const url = `${gw.url.replace('http', 'ws')}${clientPath(op, c.external)}?${query}key=${keyValue}`;
        const since = mark();
        if (!c.expected.native) {
          const answer = await withTimeout(upgradeAnswer(url), 5000, `the refusal of ${op.id}`);
          summary.operations.add(op.id);
          return refusal(t, c.expected, answer.status, answer.body, since());
        }
        const client = await withTimeout(connect(url), 5000, `the ${op.id} session to open`);
        client.terminate();
        summary.operations.add(op.id);
        summary.forwarded++;
        const sent = since();
        t.equal(sent.ws.length, 1, 'the upgrade reached the upstream once');
        t.equal(sent.http.length, 0, 'nothing reached the HTTP upstream');
        const seen = sent.ws[0];
        if (!seen) return;
        t.equal(splitUrl(seen.url ?? '').path, upstreamPath(op, c.upstream), 'upstream path');
        t.ok(carriesSecret(seen, WS_SECRET), "the Group's upstream secret is sent", { headers: seen.headers, url: seen.url });
        checkCredentialHeaders(t, seen, channel, op.protocol, WS_SECRET);
        t.notOk(carriesSecret(seen, keyValue), "the client's AccessKey is not sent upstream", { headers: seen.headers, url: seen.url });
        if (op.model === 'query') t.equal(splitUrl(seen.url ?? '').query.get('model'), c.upstream, 'the mapped upstream model in the query');
      });
    }
  }
  return summary;
}

function checkRefusal(t: Test, expected: Exclude<Expected, { native: true }>, status: number, body: string, upstreamRequests: number): void {
  t.equal(upstreamRequests, 0, 'no upstream request (HTTP or WebSocket)');
  t.equal(status, expected.status, 'refusal status');
  t.equal(reasonCodeOf(body), expected.code, `refused as ${expected.code}`, { body });
}
