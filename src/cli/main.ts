import { ManifestError, formatProblem } from '../../codegen/index.ts';
import { CliError } from './cli-error.ts';
import { upstreamModelDiscovery } from '../adapters/discovery/upstream-model-discovery.ts';
import { dataPlaneMount } from '../dataplane/mount-data-plane.ts';
import { UpstreamClient } from '../upstream/index.ts';
import { runCodegenCommand } from './commands/codegen.ts';
import { runInspect } from './commands/inspect.ts';
import { runManifestValidate } from './commands/manifest-validate.ts';
import { runMatrix } from './commands/matrix.ts';
import { runResolve } from './commands/resolve.ts';
import { runServe } from './commands/serve.ts';

const USAGE = `usage: switchyard <command> [options]

commands:
  serve [--port N] [--data DIR]                 run the gateway
  matrix [--format markdown|json]               the channel matrix from the generated tables
  resolve --protocol P --operation O --channel chNN [--model M] [--json]
                                                the engine's answer for one cell
  inspect --protocol P --model M --access-key ID [--json] [--data DIR | --url URL]
                                                route inspection
  codegen [--check]                             manifests -> src/generated
  manifest validate                             validate the manifests
`;

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
    if (argv[0] !== 'validate') throw new CliError('usage: switchyard manifest validate');
    return runManifestValidate();
  },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help') {
    process.stdout.write(USAGE);
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) throw new CliError(`unknown command "${name}"\n${USAGE}`);
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
    throw err;
  }
}
