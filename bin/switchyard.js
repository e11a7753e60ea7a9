#!/usr/bin/env node
// `serve` runs the gateway bundled into dist/ (about a second to build): without the tsx
// loader's thread and transpiled copies it peaks about 100 MB lower under load. The other
// commands run the sources through tsx, so the bin needs no build step.
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));

/** Why the bundle cannot be written to dist/ (a read-only checkout, say), or undefined when it can. */
function whyDistUnwritable() {
  try {
    mkdirSync(DIST, { recursive: true });
    accessSync(DIST, constants.W_OK);
    for (const file of ['switchyard.mjs', 'log-writer-worker.mjs']) {
      if (existsSync(path.join(DIST, file))) accessSync(path.join(DIST, file), constants.W_OK);
    }
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

const unwritable = process.argv[2] === 'serve' ? whyDistUnwritable() : undefined;
if (process.argv[2] === 'serve' && unwritable === undefined) {
  const { bundleServer } = await import('../build/bundle.mjs');
  let bundle;
  try {
    bundle = await bundleServer(new URL('../src/cli/main.ts', import.meta.url), DIST, 'switchyard');
  } catch (err) {
    process.stderr.write(`switchyard: could not bundle the gateway into dist/: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
  await import(pathToFileURL(bundle).href);
} else {
  // A stale bundle must not be served: without a writable dist/, serve runs from the sources.
  if (unwritable !== undefined) process.stderr.write(`switchyard: dist/ is not writable (${unwritable}); serving from the sources, which takes about 100 MB more memory under load\n`);
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
