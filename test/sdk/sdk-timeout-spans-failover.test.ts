import t, { type Test } from 'tap';
import OpenAI from 'openai';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { withTimeout } from '../dataplane/helpers/dataplane-scenarios.ts';
import { logOf } from './helpers/vendor-wire.ts';

// The SDK's timeout (`x-stainless-timeout`) covers the whole request, failovers included. Each
// attempt was given it whole: after a first credential's slow 429, the second's wait outlasted
// the SDK's timer, which retried (the prompt sent again) and never read the gateway's 504.

/** Far above the SDK's backoff for two retries; only bounds a hung test. */
const BOUND_MS = 30_000;

/** The upstream's first request is answered 429 after `firstAnswerMs`; every later one never. */
async function slowThenSilent(t: Test, firstAnswerMs: number) {
  let seen = 0;
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      if (++seen > 1) return;
      setTimeout(() => {
        res.writeHead(429, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"slow down"}}');
      }, firstAnswerMs);
    },
    { headersTimeoutMs: 600_000 },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'v-chat' }], protocols: ['x-completions'], upstreamKeys: ['sk-first', 'sk-second'] });
  // Default retries.
  const openai = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1` });
  return { upstream, gw, openai };
}

async function callWithTimeout(openai: OpenAI, timeoutMs: number) {
  const err = await withTimeout(
    openai.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hi' }] }, { timeout: timeoutMs }).catch((e: unknown) => e),
    BOUND_MS,
    'the SDK to give up',
  );
  return err as InstanceType<typeof OpenAI.InternalServerError>;
}

t.test('a failover within the SDK timeout: the second attempt waits for what is left, the SDK reads the typed 504', async (t) => {
  // Deadline 4 s after arrival (5 s less the margin): 2 s left after the first attempt.
  const { upstream, gw, openai } = await slowThenSilent(t, 2000);
  const err = await callWithTimeout(openai, 5000);
  t.type(err, OpenAI.InternalServerError, 'the gateway answered before the SDK timed out');
  t.equal(err.status, 504);
  t.equal(err.code, 'upstream_timeout');
  t.equal(err.headers.get('x-should-retry'), 'false');
  t.equal(upstream.requests.length, 2, 'one request per credential, none sent again by the SDK');
  t.match(await logOf(gw, err.requestID), { status: 504, error_code: 'upstream_timeout', attempt_count: 2, attempts: [{ status: 429, error_code: 'upstream_429' }, { status: null, error_code: 'upstream_timeout' }] });
});

t.test('too little of the SDK timeout left after the first attempt: no second attempt, the first attempt\'s answer as sent', async (t) => {
  // Deadline 3 s after arrival (4 s less the margin): a tenth of a second left after the first
  // attempt. The gateway's clock, not the wall clock, passes those 2.9 s: undici checks a headers
  // timeout on a coarse timer that may fire up to half a second early.
  const { upstream, gw, keyValue } = await firstAnswers(t, { status: 500, afterMs: 0, clockSkipMs: 2900, laterAnswer: false });
  const openai = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const err = await callWithTimeout(openai, 4000);
  t.type(err, OpenAI.InternalServerError, 'the gateway answered before the SDK timed out');
  t.equal(err.status, 500, "the upstream's own status, not a timeout that did not happen");
  t.match(err.error, { message: 'first failed' }, 'and its body');
  t.equal(upstream.requests.length, 1, 'the second credential was not tried');
  const log = await logOf(gw, err.requestID);
  t.match(log, { status: 500, attempt_count: 1, attempts: [{ status: 500, error_code: 'upstream_500' }] });
});

t.test('a first attempt that fails fast leaves a short SDK timeout time for the next credential', async (t) => {
  // x-stainless-timeout 2: the deadline is 1 s after arrival, and the 500 comes at once.
  const { upstream, openai } = await firstAnswers(t, { status: 500, afterMs: 0, laterAnswer: true });
  const reply = await withTimeout(openai.chat.completions.create({ model: 'team-chat', messages: [{ role: 'user', content: 'hi' }] }, { timeout: 2000 }), BOUND_MS, 'the answer');
  t.equal(reply.choices[0]?.message.content, 'from the second', 'served by the second credential');
  t.equal(upstream.requests.length, 2);
});

/**
 * The upstream's first request is answered `status` after `afterMs`, the gateway's clock moved on
 * by `clockSkipMs` first; later ones at once with 200, or never.
 */
async function firstAnswers(t: Test, first: { status: number; afterMs: number; clockSkipMs?: number; laterAnswer: boolean }) {
  let seen = 0;
  let skipped = 0;
  const { upstream, gw } = await startUpstreamAndDataPlane(
    t,
    (_req, res) => {
      if (++seen > 1) {
        if (!first.laterAnswer) return;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'v-chat', choices: [{ index: 0, message: { role: 'assistant', content: 'from the second' }, finish_reason: 'stop' }] }));
        return;
      }
      skipped += first.clockSkipMs ?? 0;
      setTimeout(() => {
        res.writeHead(first.status, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"first failed"}}');
      }, first.afterMs);
    },
    { headersTimeoutMs: 600_000, clock: () => Date.now() + skipped },
  );
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch02', baseUrl: upstream.url, models: [{ external: 'team-chat', upstream: 'v-chat' }], protocols: ['x-completions'], upstreamKeys: ['sk-first', 'sk-second'] });
  const openai = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  return { upstream, gw, keyValue, openai };
}
