import type { StreamFailure } from '../../streaming/index.ts';
import { watchIdle, type IdleWatcher } from '../../streaming/index.ts';
import type { RelayContext } from './relay-context.ts';

export function streamFailureOf(code: string): StreamFailure {
  const idle = code === 'upstream_idle_timeout';
  return { kind: idle ? 'timeout' : 'upstream', code, message: idle ? 'The upstream stopped sending; the stream was ended.' : 'The upstream stream broke off.' };
}

/** Ends an upstream stream that stays silent for the idle timeout, recording why. */
export function watchUpstreamIdle(relay: RelayContext): IdleWatcher {
  return watchIdle(relay.options.idleTimeoutMs, () => {
    relay.fail('upstream_idle_timeout');
    relay.reply.abort();
  });
}
