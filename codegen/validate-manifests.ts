import { loadManifest, parseManifest, type LoadedManifest } from './load-manifest.ts';
import { loadSchema, validateAgainstSchema } from './validate-schema.ts';
import { validateSemantics } from './validate-semantics.ts';
import type { ManifestProblem } from './manifest-problem.ts';

export const PROTOCOLS_FILE = 'manifests/protocols.yaml';
export const CHANNELS_FILE = 'manifests/channels.yaml';

export interface ValidatedManifests {
  protocols: LoadedManifest;
  channels: LoadedManifest;
}

/** What was not checked because an earlier stage found problems (it would only report their echoes). */
export type UncheckedStages = 'the schemas and the cross-references' | 'the cross-references';

/**
 * Validates both manifests under `root`: YAML syntax, then each JSON Schema, then the
 * cross-references. A stage runs only on manifests the stages before it passed, so problems
 * found early come with `unchecked`, the stages still to run. Sources may be given directly
 * (tests); otherwise they are read from disk.
 */
export function validateManifests(
  root: string,
  sources?: { protocols?: string; channels?: string },
): { manifests?: ValidatedManifests; problems: ManifestProblem[]; unchecked?: UncheckedStages } {
  const load = (file: string, source: string | undefined) => (source === undefined ? loadManifest(root, file) : parseManifest(file, source));
  const p = load(PROTOCOLS_FILE, sources?.protocols);
  const c = load(CHANNELS_FILE, sources?.channels);
  const problems = [...p.problems, ...c.problems];
  if (!p.manifest || !c.manifest) return { problems, unchecked: 'the schemas and the cross-references' };
  problems.push(...validateAgainstSchema(p.manifest, loadSchema(root, 'protocols')));
  problems.push(...validateAgainstSchema(c.manifest, loadSchema(root, 'channels')));
  if (problems.length > 0) return { problems, unchecked: 'the cross-references' };
  problems.push(...validateSemantics(p.manifest, c.manifest));
  if (problems.length > 0) return { problems };
  return { manifests: { protocols: p.manifest, channels: c.manifest }, problems };
}
