import t from 'tap';
import { streamFailureOf, streamFailureStatus } from '../../src/dataplane/relay/stream-failure-of.ts';

// docs/data-plane.md, Errors: the statuses come from the one reason table (a code missing from it
// throws here). The answer the gateway ends is 504 upstream_idle_timeout for a silent upstream, 503 for a
// shutdown and 502 upstream_stream_broken for any other failure, its event keeping its own code.

t.test('a silent upstream is 504, a shutdown 503, any other failure a 502 break', async (t) => {
  t.equal(streamFailureStatus('upstream_idle_timeout'), 504);
  t.equal(streamFailureStatus('shutting_down'), 503);
  t.equal(streamFailureStatus('upstream_stream_broken'), 502);
  t.equal(streamFailureStatus('upstream_stream_error'), 502);
  t.equal(streamFailureOf('upstream_stream_error').code, 'upstream_stream_error', 'the event keeps its own code');
  t.equal(streamFailureOf('upstream_stream_error').message, streamFailureOf('upstream_stream_broken').message, 'and says what a break says');
});
