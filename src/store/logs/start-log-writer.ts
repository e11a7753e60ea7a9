import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LogWriterData } from './log-writer-messages.ts';

/**
 * The worker entry sits next to this module with the same extension: `.ts` when run from
 * source under tsx, `.mjs` when build/bundle.mjs has bundled both (dist/, bench/.build/).
 */
const extension = extname(fileURLToPath(import.meta.url));
const workerUrl = new URL(`./log-writer-worker${extension}`, import.meta.url);

/**
 * On Node 20, tsx installs its hooks on the main thread only (whether through `--import=tsx`,
 * which workers inherit but then skip, or through bin/switchyard.js's `register()`), so a
 * TypeScript worker registers them itself before it imports its entry.
 */
function typeScriptBootstrap(): string {
  const tsxApi = import.meta.resolve('tsx/esm/api');
  return `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl.href)}); });`;
}

/**
 * The writer's young generation, in MB. V8's default lets it grow as far as the main
 * thread's (2 × 16 MB), which only adds to the process's peak memory here: the rows of a
 * batch (at most 1,024 records) take a few hundred KB. Measured under continuous bench
 * load: about 5 MB less peak RSS, and the same CPU per request.
 */
export const LOG_WRITER_YOUNG_GENERATION_MB = 4;

export function startLogWriter(data: LogWriterData): Worker {
  const resourceLimits = { maxYoungGenerationSizeMb: LOG_WRITER_YOUNG_GENERATION_MB };
  if (extension === '.ts') return new Worker(typeScriptBootstrap(), { eval: true, workerData: data, resourceLimits });
  return new Worker(workerUrl, { workerData: data, resourceLimits });
}
