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
 * Runs the gateway until SIGINT, SIGTERM or SIGHUP, then stops accepting, lets requests in flight
 * finish and flushes the stores before resolving. `extra` lets the CLI add the data plane.
 */
export async function runServe(argv: string[], extra: Partial<ServerOptions> = {}): Promise<number> {
  // From the start until the stores are closed: without a listener, node's default action kills
  // the process outright, lock and unwritten records left behind. Then no longer: a process that
  // something keeps alive past its stop still ends by the next signal.
  const signals = watchStopSignals();
  // A console that is gone (the closed terminal a SIGHUP comes from, a pipe whose reader left)
  // fails the next write with EPIPE or EIO, an 'error' event nothing heard, which ended the
  // process mid-stop: what the gateway says is lost then, its records are not.
  process.stdout.on('error', ignoreConsoleError);
  process.stderr.on('error', ignoreConsoleError);
  try {
    return await serve(argv, extra, signals);
  } finally {
    signals.dispose();
  }
}

async function serve(argv: string[], extra: Partial<ServerOptions>, signals: StopSignals): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: 'string', default: '8080' }, data: { type: 'string', default: './data' }, host: { type: 'string', default: '127.0.0.1' } },
    strict: true,
  });
  const port = parseDecimalOption('port', 'a port number', values.port, 0, 65535);

  // A second signal while starting (a long log migration, a log writer that never gets ready)
  // gives the start up: nothing is in flight yet, and the lock left behind is taken over at the
  // next start. The process dies by that signal, as with no listener: an exit would first wait
  // for the log writer's thread to finish the statement it is in.
  let starting = true;
  signals.onAgain((signal) => {
    process.stdout.write('switchyard: second signal while starting, stopping now\n');
    signals.dispose();
    process.kill(process.pid, signal);
  });
  void signals.stopped.then(() => {
    if (starting) process.stdout.write(`switchyard: ${signals.first} received while starting, stopping once started\n`);
  });
  let server: RunningServer;
  try {
    server = await createServer({ dataDir: values.data, host: values.host, port, openLogStore: (dir) => openWorkerLogStore(dir, { onError: reportLogStoreError, onNotice: (message) => process.stdout.write(`switchyard: ${message}\n`) }), ...extra });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new CliError(`port ${port} on ${values.host} is already in use`, 1);
    const message = describeRunError(err, `data directory ${values.data}`);
    if (message !== undefined) throw new CliError(message, 1);
    throw err;
  } finally {
    starting = false;
  }
  // A later signal while draining means "now": the requests in flight are cut, and the
  // records already appended still get a bounded moment to be written.
  let cutShort = false;
  signals.onAgain(() => {
    cutShort = true;
    process.stdout.write('switchyard: second signal, cutting the requests in flight\n');
    void server.cutShort().catch(() => undefined).then(() => {
      setTimeout(() => {
        const unwritten = server.logs.buffered ?? 0;
        process.stderr.write(`switchyard: stopped with an error: ${unwritten} request records could not be written: still being written ${FORCED_FLUSH_MS / 1000} s after the second signal cut the requests\n`);
        process.exit(1);
      }, FORCED_FLUSH_MS).unref();
    });
  });
  // Stopped while starting: the ready line is never printed, and the start ends as a stop does.
  if (signals.first === undefined) {
    process.stdout.write(`switchyard ${server.url} (management API at ${server.url}/api, data in ${values.data})\n`);
    await signals.stopped;
    process.stdout.write(`switchyard: ${signals.first} received, finishing requests and flushing stores\n`);
  }
  try {
    await server.close();
  } catch (err) {
    // One line, no stack: the operator needs what was lost and why, not where.
    process.stderr.write(`switchyard: stopped with an error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  if (cutShort) {
    process.stdout.write('switchyard: stopped, requests in flight cut short\n');
    return 1;
  }
  process.stdout.write('switchyard: stopped\n');
  return 0;
}

interface StopSignals {
  /** The first stop signal, once one came. */
  readonly first: NodeJS.Signals | undefined;
  /** Resolves on the first signal. */
  readonly stopped: Promise<void>;
  /** From now on, `handler` is what the first signal more than DUPLICATE_SIGNAL_MS after the first does. */
  onAgain(handler: (signal: NodeJS.Signals) => void): void;
  /** Stops listening: a later signal gets node's default action. */
  dispose(): void;
}

/**
 * The signals that stop the gateway cleanly. SIGHUP too: a closed terminal or a dropped SSH
 * session sends it, and its default action would kill the gateway with records unwritten.
 */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Listens for the STOP_SIGNALS until disposed; any signal after the second "again" is ignored. */
function watchStopSignals(): StopSignals {
  let first: NodeJS.Signals | undefined;
  let firstAt = 0;
  let again = false;
  let againHandler: ((signal: NodeJS.Signals) => void) | undefined;
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
    againHandler?.(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    get first() {
      return first;
    },
    stopped,
    onAgain(handler) {
      againHandler = handler;
    },
    dispose() {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    },
  };
}

/** The log store recovers on its own (retries, a new worker); the operator still needs to know. */
function reportLogStoreError(error: unknown): void {
  process.emitWarning(`request logs: ${error instanceof Error ? error.message : String(error)}`);
}

function ignoreConsoleError(): void {}
