export { runCodegen, generateAll, GENERATED_DIR } from './run-codegen.ts';
export { validateManifests, PROTOCOLS_FILE, CHANNELS_FILE } from './validate-manifests.ts';
export { formatProblem, formatUnchecked, ManifestError, type ManifestProblem } from './manifest-problem.ts';
