#!/usr/bin/env node
// `serve` runs the gateway bundled into dist/ (about a second to build): without the tsx
// loader's thread and transpiled copies it peaks about 100 MB lower under load. The other
// commands run the sources through tsx, so the bin needs no build step.
import { pathToFileURL } from 'node:url';
import { DIST, whyDistUnwritable } from '../build/dist-writable.mjs';

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
