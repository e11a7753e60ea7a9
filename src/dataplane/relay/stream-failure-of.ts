import { REFUSAL_REASONS } from '../../engine/index.ts';
import type { StreamFailure } from '../../streaming/index.ts';
import { watchIdle, type IdleWatcher } from '../../streaming/index.ts';
import { errorShapeOf } from '../error-shape-table.ts';
import type { RelayContext } from './relay-context.ts';

// A shutdown's event ends an answer under way, which its refusal (a handshake's) does not.
const SHUTDOWN_MESSAGE = 'The gateway is shutting down; the answer was ended.';

/** The reason a stream's failure is answered with: a silent upstream, a shutdown, else a break. */
function reasonOf(code: string): 'upstream_idle_timeout' | 'shutting_down' | 'upstream_stream_broken' {
  return code === 'upstream_idle_timeout' || code === 'shutting_down' ? code : 'upstream_stream_broken';
}

/**
 * A stream's failure as its error event names it, by the status its HTTP answer would have had;
 * a plain body's failure before its first byte is answered with the same words.
 */
export function streamFailureOf(code: string): StreamFailure {
  const status = streamFailureStatus(code);
  const reason = reasonOf(code);
  const message = reason === 'shutting_down' ? SHUTDOWN_MESSAGE : REFUSAL_REASONS[reason].message;
  return { code, message, status, words: errorShapeOf(status) };
}

/** The HTTP status a stream's failure is answered with when it comes before the stream's first byte. */
export function streamFailureStatus(code: string): number {
  return REFUSAL_REASONS[reasonOf(code)].status;
}

/**
 * Ends a stream that stays silent for the idle timeout, recording why: the upstream stopped
 * sending, or the client stopped reading (`client_stalled`; the upstream was paused for it).
 */
export function watchUpstreamIdle(relay: RelayContext): IdleWatcher {
  return watchIdle(relay.options.idleTimeoutMs, (held) => {
    relay.fail(held ? 'client_stalled' : 'upstream_idle_timeout');
    relay.reply.abort();
  });
}
