import { parseArgs } from 'node:util';
import { createServer, type ServerOptions } from '../../server/create-server.ts';
import { openWorkerLogStore } from '../../store/logs/index.ts';
import { CliError } from '../cli-error.ts';
import { describeRunError } from '../describe-run-error.ts';
import { parseDecimalOption } from '../parse-decimal-option.ts';

/** How long a second signal leaves the records already appended to be written. */
const FORCED_FLUSH_MS = 2000;

/**
 * Runs the gateway until SIGINT or SIGTERM, then stops accepting, lets requests in flight
 * finish and flushes the stores before resolving. `extra` lets the CLI add the data plane.
 */
export async function runServe(argv: string[], extra: Partial<ServerOptions> = {}): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: 'string', default: '8080' }, data: { type: 'string', default: './data' }, host: { type: 'string', default: '127.0.0.1' } },
    strict: true,
  });
  const port = parseDecimalOption('port', 'a port number', values.port, 0, 65535);

  let server;
  try {
    server = await createServer({ dataDir: values.data, host: values.host, port, openLogStore: (dir) => openWorkerLogStore(dir, { onError: reportLogStoreError }), ...extra });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new CliError(`port ${port} on ${values.host} is already in use`, 1);
    const message = describeRunError(err, `data directory ${values.data}`);
    if (message !== undefined) throw new CliError(message, 1);
    throw err;
  }
  process.stdout.write(`switchyard ${server.url} (management API at ${server.url}/api, data in ${values.data})\n`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  process.stdout.write(`switchyard: ${signal} received, finishing requests and flushing stores\n`);
  // A second signal while draining means "now": the requests in flight are cut, and the
  // records already appended still get a bounded moment to be written.
  let cutShort = false;
  const force = () => {
    // A third signal and more: the cut is under way, and the records still get their moment.
    if (cutShort) return;
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
  process.on('SIGINT', force);
  process.on('SIGTERM', force);
  try {
    await server.close();
  } catch (err) {
    // One line, no stack: the operator needs what was lost and why, not where.
    process.stderr.write(`switchyard: stopped with an error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', force);
    process.off('SIGTERM', force);
  }
  if (cutShort) {
    process.stdout.write('switchyard: stopped, requests in flight cut short\n');
    return 1;
  }
  process.stdout.write('switchyard: stopped\n');
  return 0;
}

/** The log store recovers on its own (retries, a new worker); the operator still needs to know. */
function reportLogStoreError(error: unknown): void {
  process.emitWarning(`request logs: ${error instanceof Error ? error.message : String(error)}`);
}
