import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import { OPERATIONS, PROTOCOL_IDS, type OperationId } from '../../src/generated/index.ts';
import { startUpstreamAndDataPlane, type Gateway } from './helpers/data-plane-harness.ts';
import { clientAuthHeaders, createKey, nativeChannelFor, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// Issue 4 item 8: an AccessKey that allows every protocol but one is refused 403
// protocol_not_allowed on that one, in that protocol's error shape (decisions.md §6), before
// anything is sent upstream. One case per protocol id of decisions.md §2, WebSocket ones
// through an upgrade.

type Style = 'completions' | 'messages' | 'generate';

interface Case {
  protocol: string;
  /** An operation of the protocol (only to find a channel whose route for it is native). */
  operation: OperationId;
  method: string;
  path: string;
  body?: unknown;
  style: Style;
  websocket?: boolean;
}

// decisions.md §2 endpoints and §6 error styles, written out by hand.
const CASES: Case[] = [
  { protocol: 'x-completions', operation: 'chat-completions', method: 'POST', path: '/v1/chat/completions', body: { model: 'team-m', messages: [{ role: 'user', content: 'hi' }] }, style: 'completions' },
  { protocol: 'x-responses', operation: 'responses-create', method: 'POST', path: '/v1/responses', body: { model: 'team-m', input: 'hi' }, style: 'completions' },
  { protocol: 'x-messages', operation: 'messages-create', method: 'POST', path: '/v1/messages', body: { model: 'team-m', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, style: 'messages' },
  { protocol: 'x-generate', operation: 'generate-content', method: 'POST', path: '/v1beta/models/team-m:generateContent', body: { contents: [{ parts: [{ text: 'hi' }] }] }, style: 'generate' },
  { protocol: 'x-images', operation: 'images-generations', method: 'POST', path: '/v1/images/generations', body: { model: 'team-m', prompt: 'a cat' }, style: 'completions' },
  { protocol: 'x-chat-embeddings', operation: 'embeddings', method: 'POST', path: '/v1/embeddings', body: { model: 'team-m', input: 'hi' }, style: 'completions' },
  { protocol: 'x-embeddings', operation: 'embed-content', method: 'POST', path: '/v1beta/models/team-m:embedContent', body: { content: { parts: [{ text: 'hi' }] } }, style: 'generate' },
  { protocol: 'rerank', operation: 'rerank', method: 'POST', path: '/v1/rerank', body: { model: 'team-m', query: 'q', documents: ['a', 'b'] }, style: 'completions' },
  { protocol: 'decisions', operation: 'decisions', method: 'POST', path: '/v1/decisions', body: { model: 'team-m', input: 'hi' }, style: 'completions' },
  { protocol: 'x-live', operation: 'live', method: 'GET', path: '/v1/live?model=team-m', style: 'generate', websocket: true },
  { protocol: 'x-suite', operation: 'ocr', method: 'POST', path: '/v1/ocr', body: { model: 'team-m', document: { type: 'document_url', document_url: 'https://example.invalid/a.pdf' } }, style: 'completions' },
  { protocol: 'x-suite', operation: 'audio-transcriptions-realtime', method: 'GET', path: '/v1/audio/transcriptions/realtime?model=team-m', style: 'completions', websocket: true },
];

// x-live's only channel takes OAuth credentials, which need an authorization flow: its Group
// gets none, which is fine since the refusal comes before any credential is chosen (a gateway
// that skipped the check would answer 503 no_available_credential instead).
const LIVE_CHANNEL = 'ch10';

t.test('every protocol id of decisions.md §2 has a case', async (t) => {
  t.same(new Set(CASES.map((c) => c.protocol)), new Set(PROTOCOL_IDS));
});

function checkShape(t: Test, style: Style, body: unknown): void {
  if (style === 'messages') {
    t.match(body, { type: 'error', error: { type: 'permission_error', code: 'protocol_not_allowed' } }, 'messages shape');
  } else if (style === 'generate') {
    t.match(body, { error: { code: 403, status: 'PERMISSION_DENIED', message: String, details: [{ reason: 'protocol_not_allowed' }] } }, 'generate shape');
  } else {
    t.match(body, { error: { type: 'permission_error', code: 'protocol_not_allowed', message: String } }, 'completions shape');
    t.notOk((body as { type?: unknown }).type, 'not the messages shape');
  }
}

/** The refusal of an upgrade: status, request id and parsed body. */
function upgradeRefusal(url: string): Promise<{ status: number; requestId: string | undefined; body: unknown }> {
  return withTimeout(
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const id = res.headers['x-switchyard-request-id'];
          resolve({ status: res.statusCode ?? 0, requestId: Array.isArray(id) ? id[0] : id, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        });
      });
      ws.once('open', () => {
        ws.terminate();
        reject(new Error('the upgrade was accepted'));
      });
      ws.once('error', () => {});
    }),
    5000,
    'the upgrade refusal',
  );
}

async function seed(gw: Gateway, c: Case, baseUrl: string): Promise<string> {
  const models = [{ external: 'team-m', upstream: 'vendor-m' }];
  if (c.protocol === 'x-live') {
    await gw.store.groups.create({ name: 'live', channel: LIVE_CHANNEL, base_url: baseUrl, models, priority: 0, weight: 1 });
    return LIVE_CHANNEL;
  }
  const channel = nativeChannelFor(OPERATIONS[c.operation]);
  if (channel === undefined) throw new Error(`no native channel for ${c.operation}`);
  await seedGroup(gw.store, { channel, baseUrl, models, secrets: ['sk-up-pna-0123456789'] });
  return channel;
}

for (const c of CASES) {
  t.test(`${c.protocol} ${c.operation}: a key allowing every other protocol is refused 403 protocol_not_allowed`, async (t) => {
    const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => void res.end('{}'));
    const channel = await seed(gw, c, upstream.url);
    const others = PROTOCOL_IDS.filter((p) => p !== c.protocol);
    const { key, keyValue } = await createKey(gw.store, { protocols: others });

    let status: number;
    let body: unknown;
    let requestId: string | null | undefined;
    if (c.websocket) {
      const refusal = await upgradeRefusal(`${gw.url.replace('http', 'ws')}${c.path}&key=${keyValue}`);
      ({ status, body, requestId } = refusal);
    } else {
      const res = await fetch(`${gw.url}${c.path}`, { method: c.method, headers: { ...clientAuthHeaders(c.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify(c.body) });
      status = res.status;
      body = await res.json();
      requestId = res.headers.get('x-switchyard-request-id');
    }

    t.equal(status, 403, `refused on ${channel}`);
    checkShape(t, c.style, body);
    t.equal(upstream.requests.length, 0, 'nothing sent upstream');
    t.match(await waitForLog(gw, requestId), { error_code: 'protocol_not_allowed', status: 403, access_key_id: key.id, protocol: c.protocol });
  });
}
