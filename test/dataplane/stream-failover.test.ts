import t, { type Test } from 'tap';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { chatBody, createKey, credentialView, readIncrementally, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { secretOf } from './helpers/upstream-behaviours.ts';

// Issue 4 item 8: failover on a streaming request. The first credential refuses (429, 503)
// before any stream starts; the next one streams, and the client gets that stream as the
// second upstream sent it, with both attempts in the log and the first credential cooling down.

const FIRST = 'sk-stream-first-0123456789';
const SECOND = 'sk-stream-second-0123456789';

interface StreamCase {
  name: string;
  channel: string;
  protocol: string;
  path: string;
  headers: (key: string) => Record<string, string>;
  body: string;
  /** What the serving upstream streams. */
  events: string[];
  /** What the client must receive of it. */
  expected: string;
  usage: { input_tokens: number; output_tokens: number };
}

const completionChunk = (content: string, finish: string | null) => `data: {"id":"c9","object":"chat.completion.chunk","model":"vendor-chat","choices":[{"index":0,"delta":{"content":"${content}"},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
// The usage chunk the gateway asked for (the client did not): the upstream sends it, the client never sees it.
const completionUsage = 'data: {"id":"c9","object":"chat.completion.chunk","model":"vendor-chat","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}}\n\n';

const generateEvents = [
  'data: {"candidates": [{"content": {"parts": [{"text": "first "}],"role": "model"}}],"modelVersion": "vendor-gen"}\r\n\r\n',
  'data: {"candidates": [{"content": {"parts": [{"text": "second"}],"role": "model"},"finishReason": "STOP"}],"usageMetadata": {"promptTokenCount": 13,"candidatesTokenCount": 6,"totalTokenCount": 19}}\r\n\r\n',
];

const CASES: StreamCase[] = [
  {
    name: 'chat completions stream',
    channel: 'ch02',
    protocol: 'x-completions',
    path: '/v1/chat/completions',
    headers: (key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' }),
    body: chatBody('team-chat', true),
    events: [completionChunk('Hel', null), completionChunk('lo', 'stop'), completionUsage, 'data: [DONE]\n\n'],
    expected: completionChunk('Hel', null) + completionChunk('lo', 'stop') + 'data: [DONE]\n\n',
    usage: { input_tokens: 11, output_tokens: 4 },
  },
  {
    name: 'generate streamGenerateContent alt=sse',
    channel: 'ch15',
    protocol: 'x-generate',
    path: '/v1beta/models/team-chat:streamGenerateContent?alt=sse',
    headers: (key) => ({ 'x-goog-api-key': key, 'content-type': 'application/json' }),
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    events: generateEvents,
    expected: generateEvents.join(''),
    usage: { input_tokens: 13, output_tokens: 6 },
  },
];

for (const c of CASES) {
  for (const refusal of [429, 503]) {
    t.test(`${c.name}: the first credential answers ${refusal} before any stream, the next streams`, async (t: Test) => {
      const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
        if (secretOf(req) === FIRST) {
          res.writeHead(refusal, { 'content-type': 'application/json' });
          res.end(`{"error":{"message":"first says ${refusal}"}}`);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req-second' });
        for (const e of c.events) res.write(e);
        res.end();
      });
      const { group, credentials } = await seedGroup(gw.store, { channel: c.channel, baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'vendor-chat' }], secrets: [FIRST, SECOND] });
      const [first, second] = credentials as [(typeof credentials)[0], (typeof credentials)[0]];
      const { keyValue } = await createKey(gw.store, { protocols: [c.protocol] });

      const res = await fetch(`${gw.url}${c.path}`, { method: 'POST', headers: c.headers(keyValue), body: c.body });
      const text = await readIncrementally(res);

      t.equal(res.status, 200, 'the second credential serves');
      t.match(res.headers.get('content-type'), /^text\/event-stream/);
      t.equal(res.headers.get('request-id'), 'req-second', 'the serving upstream\'s headers');
      t.equal(text, c.expected, 'the stream as the second upstream sent it');
      t.same(upstream.requests.map(secretOf), [FIRST, SECOND], 'first credential, then the next');

      const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
      t.match(record, {
        status: 200,
        error_code: null,
        credential_id: String(second.id),
        attempt_count: 2,
        attempts: [
          { credential_id: String(first.id), status: refusal, error_code: `upstream_${refusal}` },
          { credential_id: String(second.id), status: 200, error_code: null },
        ],
      });
      t.equal(record.attempts.length, 2, 'every attempt listed, no more');
      t.same(record.usage, { ...c.usage, cached_tokens: 0, reasoning_tokens: 0 }, 'usage of the stream that served');

      t.equal((await credentialView(gw.store, group.id, first.id)).state, 'cooldown', 'the refusing credential cools down');
      t.equal((await credentialView(gw.store, group.id, second.id)).state, 'active');
    });
  }
}
