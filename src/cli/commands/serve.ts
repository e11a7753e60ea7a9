import { parseArgs } from 'node:util';
import { createServer, type RunningServer, type ServerOptions } from '../../server/create-server.ts';
import { openWorkerLogStore } from '../../store/logs/index.ts';
import { CliError } from '../cli-error.ts';
import { describeRunError } from '../describe-run-error.ts';
import { parseDecimalOption } from '../parse-decimal-option.ts';

/** How long a second signal leaves the records already appended to be written. */
const FORCED_FLUSH_MS = 2000;

/**
 * A signal this soon after the first is the same stop delivered twice, not an operator asking
 * again: Ctrl-C on `npm start` reaches node from the terminal and once more from npm, which
 * forwards what it got; systemd's control-group kill and GNU timeout do the same. Those copies
 * come milliseconds apart; a person pressing again takes longer than this.
 */
const DUPLICATE_SIGNAL_MS = 1000;

/**
 * Runs the gateway until SIGINT or SIGTERM, then stops accepting, lets requests in flight
 * finish and flushes the stores before resolving. `extra` lets the CLI add the data plane.
 */
export async function runServe(argv: string[], extra: Partial<ServerOptions> = {}): Promise<number> {
  // From the start and never removed: without a listener, node's default action kills the
  // process outright, lock and unwritten records left behind.
  const signals = watchStopSignals();
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: 'string', default: '8080' }, data: { type: 'string', default: './data' }, host: { type: 'string', default: '127.0.0.1' } },
    strict: true,
  });
  const port = parseDecimalOption('port', 'a port number', values.port, 0, 65535);

  let server: RunningServer;
  try {
    server = await createServer({ dataDir: values.data, host: values.host, port, openLogStore: (dir) => openWorkerLogStore(dir, { onError: reportLogStoreError }), ...extra });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new CliError(`port ${port} on ${values.host} is already in use`, 1);
    const message = describeRunError(err, `data directory ${values.data}`);
    if (message !== undefined) throw new CliError(message, 1);
    throw err;
  }
  if (signals.first === undefined) {
    process.stdout.write(`switchyard ${server.url} (management API at ${server.url}/api, data in ${values.data})\n`);
    await signals.stopped;
    process.stdout.write(`switchyard: ${signals.first} received, finishing requests and flushing stores\n`);
  } else {
    // Stopped while starting: the ready line was never printed, and the start ends as a stop does.
    process.stdout.write(`switchyard: ${signals.first} received while starting, stopping\n`);
  }

  // A later signal while draining means "now": the requests in flight are cut, and the
  // records already appended still get a bounded moment to be written.
  let draining = true;
  let cutShort = false;
  const cut = () => {
    if (!draining) return;
    cutShort = true;
    process.stdout.write('switchyard: second signal, cutting the requests in flight\n');
    void server.cutShort().catch(() => undefined).then(() => {
      setTimeout(() => {
        const unwritten = server.logs.buffered ?? 0;
        process.stderr.write(`switchyard: stopped with an error: ${unwritten} request records could not be written: still being written ${FORCED_FLUSH_MS / 1000} s after the second signal cut the requests\n`);
        process.exit(1);
      }, FORCED_FLUSH_MS).unref();
    });
  };
  signals.onAgain(cut);
  try {
    await server.close();
  } catch (err) {
    // One line, no stack: the operator needs what was lost and why, not where.
    process.stderr.write(`switchyard: stopped with an error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    draining = false;
  }
  if (cutShort) {
    process.stdout.write('switchyard: stopped, requests in flight cut short\n');
    return 1;
  }
  process.stdout.write('switchyard: stopped\n');
  return 0;
}

interface StopSignals {
  /** The first SIGINT or SIGTERM, once one came. */
  readonly first: NodeJS.Signals | undefined;
  /** Resolves on the first signal. */
  readonly stopped: Promise<void>;
  /** `handler` runs once, on the first signal more than DUPLICATE_SIGNAL_MS after the first (at once if one came already). */
  onAgain(handler: () => void): void;
}

/** Listens for SIGINT and SIGTERM until the process exits; any signal after the second "again" is ignored. */
function watchStopSignals(): StopSignals {
  let first: NodeJS.Signals | undefined;
  let firstAt = 0;
  let again = false;
  let againHandler: (() => void) | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    if (first === undefined) {
      first = signal;
      firstAt = performance.now();
      resolveStopped();
      return;
    }
    if (again || performance.now() - firstAt <= DUPLICATE_SIGNAL_MS) return;
    again = true;
    againHandler?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    get first() {
      return first;
    },
    stopped,
    onAgain(handler) {
      againHandler = handler;
      if (again) handler();
    },
  };
}

/** The log store recovers on its own (retries, a new worker); the operator still needs to know. */
function reportLogStoreError(error: unknown): void {
  process.emitWarning(`request logs: ${error instanceof Error ? error.message : String(error)}`);
}
