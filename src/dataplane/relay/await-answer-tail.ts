import { watchIdle } from '../../streaming/index.ts';
import type { RelayContext } from './relay-context.ts';

/**
 * An answer ended while the client's socket was full: its tail is still in node's buffer for
 * the connection, the client does not have it yet, and node starts no timer of its own until
 * 'finish'. It is held to the rule a stream's client is held to while the answer still comes:
 * `settle` (which lets the record be written) is called once the tail is in the kernel's hands
 * ('finish'), once the client leaves (`client_closed`), or once the idle timeout passes with
 * neither (`client_stalled`: the connection is closed, as a client that does not read would
 * not read anything more). Only an answer whose end did not go out whole comes here, so that
 * the usual one pays no listener nor watcher.
 */
export function awaitAnswerTail(relay: RelayContext, settle: () => void): void {
  const { res, options } = relay;
  let settled = false;
  const finish = (): void => {
    if (settled) return;
    settled = true;
    idle.stop();
    res.off('finish', onFinish);
    options.onClientGone(undefined);
    settle();
  };
  const gone = (): void => {
    if (settled) return;
    relay.clientLeft();
    finish();
  };
  // node also emits 'finish' when the connection broke under the tail (a client that reset it
  // fails the pending writes): only one still up had its tail taken by the kernel.
  const onFinish = (): void => (res.req.socket.destroyed ? gone() : finish());
  const idle = watchIdle(options.idleTimeoutMs, () => {
    relay.fail('client_stalled');
    // Told no more of the client first: the close that follows is the gateway's doing.
    finish();
    res.destroy();
  });
  res.once('finish', onFinish);
  options.onClientGone(gone);
}
