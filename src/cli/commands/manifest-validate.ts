import { formatProblem, validateManifests } from '../../../codegen/index.ts';
import { repoRoot } from '../repo-root.ts';

export function runManifestValidate(): number {
  const { problems } = validateManifests(repoRoot());
  if (problems.length === 0) {
    process.stdout.write('manifests: valid\n');
    return 0;
  }
  process.stderr.write(`${problems.map(formatProblem).join('\n')}\n`);
  return 1;
}
