import { formatProblem, validateManifests } from '../../../codegen/index.ts';
import { repoRoot } from '../repo-root.ts';

export function runManifestValidate(): number {
  const { problems, unchecked } = validateManifests(repoRoot());
  if (problems.length === 0) {
    process.stdout.write('manifests: valid\n');
    return 0;
  }
  const lines = problems.map(formatProblem);
  // Without this line a clean second run would look like the end of the list.
  if (unchecked) lines.push(`manifests: ${unchecked} are checked once these problems are fixed`);
  process.stderr.write(`${lines.join('\n')}\n`);
  return 1;
}
