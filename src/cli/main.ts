import { ManifestError, formatProblem } from '../../codegen/index.ts';
import { CliError } from './cli-error.ts';
import { describeRunError } from './describe-run-error.ts';
import { upstreamModelDiscovery } from '../adapters/discovery/upstream-model-discovery.ts';
import { dataPlaneMount } from '../dataplane/mount-data-plane.ts';
import { UpstreamClient } from '../upstream/index.ts';
import { runCodegenCommand } from './commands/codegen.ts';
import { INSPECT_USAGE, runInspect } from './commands/inspect.ts';
import { runManifestValidate } from './commands/manifest-validate.ts';
import { runMatrix } from './commands/matrix.ts';
import { RESOLVE_USAGE, runResolve } from './commands/resolve.ts';
import { runServe } from './commands/serve.ts';

/** One usage line and what it does per command: the top-level help and each command's --help. */
const COMMAND_HELP: Record<string, { usage: string; does: string }> = {
  serve: { usage: 'serve [--port N] [--data DIR] [--host HOST]', does: 'run the gateway (port 8080, data ./data, host 127.0.0.1 by default)' },
  matrix: { usage: 'matrix [--format markdown|json]', does: 'the channel matrix from the generated tables' },
  resolve: { usage: RESOLVE_USAGE, does: 'the engine\'s answer for one cell' },
  inspect: { usage: INSPECT_USAGE, does: 'route inspection' },
  codegen: { usage: 'codegen [--check]', does: 'manifests -> src/generated' },
  manifest: { usage: 'manifest validate', does: 'validate the manifests' },
};

const USAGE = `usage: switchyard <command> [options]

commands:
${Object.values(COMMAND_HELP)
  .map(({ usage, does }) => (usage.length <= 44 ? `  ${usage.padEnd(46)}${does}` : `  ${usage}\n${' '.repeat(48)}${does}`))
  .join('\n')}
`;

const HELP_FLAGS = new Set(['--help', '-h']);

const commands: Record<string, (argv: string[]) => number | Promise<number>> = {
  serve: (argv) => {
    const discoveryClient = new UpstreamClient();
    return runServe(argv, { mountDataPlane: dataPlaneMount(), modelDiscovery: upstreamModelDiscovery(discoveryClient) });
  },
  inspect: runInspect,
  matrix: runMatrix,
  resolve: runResolve,
  codegen: runCodegenCommand,
  manifest: (argv) => {
    if (argv.length !== 1 || argv[0] !== 'validate') throw new CliError(`usage: switchyard ${COMMAND_HELP.manifest!.usage}`);
    return runManifestValidate();
  },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || HELP_FLAGS.has(name)) {
    process.stdout.write(USAGE);
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) throw new CliError(`unknown command "${name}"\n${USAGE}`);
  // Options after "--" are operands, not a request for help.
  const options = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest;
  if (options.some((arg) => HELP_FLAGS.has(arg))) {
    const help = COMMAND_HELP[name]!;
    process.stdout.write(`usage: switchyard ${help.usage}\n  ${help.does}\n`);
    return 0;
  }
  return command(rest);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof ManifestError) {
    process.stderr.write(`${err.problems.map(formatProblem).join('\n')}\n`);
    process.exitCode = 1;
  } else if (err instanceof CliError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
    process.stderr.write(`switchyard: ${err.message}\n`);
    process.exitCode = err instanceof CliError ? err.exitCode : 2;
  } else {
    const message = describeRunError(err);
    if (message === undefined) throw err;
    process.stderr.write(`switchyard: ${message}\n`);
    process.exitCode = 1;
  }
}
