import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from './cli-error.ts';

/**
 * The checkout this CLI belongs to (manifests, codegen and src/generated live there): the
 * nearest folder above this module that holds `manifests/`, whether the module runs from
 * src/cli/ or bundled in dist/.
 */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'manifests', 'channels.yaml'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new CliError('no manifests/ folder above the CLI; run it from a checkout', 1);
    dir = parent;
  }
  return dir;
}
