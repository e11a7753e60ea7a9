import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog, withTimeout } from './helpers/dataplane-scenarios.ts';

// A plain (non-SSE) answer whose upstream goes silent mid-body is cut at the idle timeout, not
// at the upstream client's body timeout (here a minute away): the client's connection is
// destroyed (a plain body has no error event) and the record says upstream_idle_timeout
// (docs/data-plane.md, timeouts).

/** A speech request through a ch03 Group whose upstream answers with `answer`; the body timeout's backstop far off (60 s). */
async function speech(t: Test, answer: (res: ServerResponse) => void, streamIdleTimeoutMs: number) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => answer(res), { streamIdleTimeoutMs, headersTimeoutMs: 60_000 });
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'up-tts' }], secrets: ['sk-up-secret-0123456789'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
  const res = await fetch(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyValue}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts', input: 'hello', voice: 'alloy' }),
  });
  return { gw, res };
}

t.test('a plain audio body that stalls after its first bytes is cut at the idle timeout', async (t) => {
  const { gw, res } = await speech(
    t,
    (res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      // Sent, then nothing more: the body stays open.
      res.write(Buffer.from([0xff, 0xfb, 1, 2]));
    },
    300,
  );
  t.equal(res.status, 200);
  const read = (async () => {
    let bytes = 0;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
      return { bytes, broken: false };
    } catch {
      return { bytes, broken: true };
    }
  })();
  // Bounded well under the body timeout's backstop: without the idle watch the body would still be open.
  const got = await withTimeout(read, 10_000, 'the stalled body to be cut');
  t.equal(got.bytes, 4, 'the bytes sent before the stall reached the client');
  t.ok(got.broken, 'the connection was cut: the client cannot take the body for whole');
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.status, 200);
  t.equal(record.error_code, 'upstream_idle_timeout');
  t.equal(record.client_aborted, false);
  t.equal(record.attempts[0]?.error_code, 'upstream_idle_timeout');
});

t.test('a plain body that goes on in several reads, each within the idle timeout, arrives whole', async (t) => {
  const { gw, res } = await speech(
    t,
    (res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      let sent = 0;
      const next = () => {
        if (++sent > 8) return res.end();
        res.write(Buffer.alloc(1000, sent));
        setTimeout(next, 100);
      };
      next();
    },
    400,
  );
  // Longer in all than the idle timeout: each read counts as activity.
  t.equal((await res.arrayBuffer()).byteLength, 8000);
  const record = await waitForLog(gw, res.headers.get('x-switchyard-request-id'));
  t.equal(record.error_code, null);
});
