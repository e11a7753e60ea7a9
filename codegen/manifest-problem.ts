/** One thing wrong with a manifest, located so an editor can jump to it. */
export interface ManifestProblem {
  file: string;
  line: number;
  column: number;
  field: string;
  message: string;
}

export function formatProblem(p: ManifestProblem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.field}: ${p.message}`;
}

/** The line that says which stages of validation waited for the problems listed. */
export function formatUnchecked(unchecked: string): string {
  return `${unchecked} are checked once these problems are fixed`;
}

/** Thrown when manifests do not validate; carries every problem, not only the first. */
export class ManifestError extends Error {
  constructor(
    readonly problems: ManifestProblem[],
    unchecked?: string,
  ) {
    super(`${problems.length} manifest problem(s):\n${problems.map(formatProblem).join('\n')}${unchecked ? `\n${formatUnchecked(unchecked)}` : ''}`);
  }
}
