import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The checkout this CLI belongs to (manifests, codegen and src/generated live there). */
export function repoRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}
