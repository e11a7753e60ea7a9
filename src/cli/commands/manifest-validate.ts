import { formatProblem, formatUnchecked, validateManifests } from '../../../codegen/index.ts';
import { repoRoot } from '../repo-root.ts';

export function runManifestValidate(): number {
  const { problems, unchecked } = validateManifests(repoRoot());
  if (problems.length === 0) {
    process.stdout.write('manifests: valid\n');
    return 0;
  }
  const lines = problems.map(formatProblem);
  // Without this line a clean second run would look like the end of the list.
  if (unchecked) lines.push(`manifests: ${formatUnchecked(unchecked)}`);
  process.stderr.write(`${lines.join('\n')}\n`);
  return 1;
}
