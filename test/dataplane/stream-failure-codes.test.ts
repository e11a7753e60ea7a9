import t from 'tap';
import { REFUSAL_REASONS } from '../../src/engine/index.ts';
import { streamFailureOf, streamFailureStatus } from '../../src/dataplane/relay/stream-failure-of.ts';

// docs/data-plane.md, Errors: every data-plane reason code, its status and its message are in the
// one table. The codes of an answer the gateway ends (an error event, or the HTTP error before
// the first byte) come from it too, so the documented 504 and 502 are the table's.

t.test('a silent upstream and a broken answer are the table\'s codes, statuses and messages', async (t) => {
  for (const code of ['upstream_idle_timeout', 'upstream_stream_broken'] as const) {
    const entry = REFUSAL_REASONS[code];
    t.ok(entry, `${code} is in refusal-reasons.ts`);
    t.equal(streamFailureStatus(code), entry?.status, `${code}: status`);
    t.equal(streamFailureOf(code).message, entry?.message, `${code}: message`);
  }
  t.equal(REFUSAL_REASONS.upstream_idle_timeout?.status, 504);
  t.equal(REFUSAL_REASONS.upstream_stream_broken?.status, 502);
});

t.test('a shutdown is answered with its status; any other failure as a break', async (t) => {
  t.equal(streamFailureStatus('shutting_down'), REFUSAL_REASONS.shutting_down.status);
  t.equal(streamFailureStatus('upstream_stream_error'), 502);
  t.equal(streamFailureOf('upstream_stream_error').code, 'upstream_stream_error', 'the event keeps its own code');
});
