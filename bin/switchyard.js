#!/usr/bin/env node
// `serve` runs the gateway bundled into dist/ (about a second to build): without the tsx
// loader's thread and transpiled copies it peaks about 100 MB lower under load. The other
// commands run the sources through tsx, so the bin needs no build step.
import { fileURLToPath, pathToFileURL } from 'node:url';

if (process.argv[2] === 'serve') {
  const { bundleServer } = await import('../build/bundle.mjs');
  let bundle;
  try {
    bundle = await bundleServer(new URL('../src/cli/main.ts', import.meta.url), fileURLToPath(new URL('../dist/', import.meta.url)), 'switchyard');
  } catch (err) {
    process.stderr.write(`switchyard: could not bundle the gateway into dist/: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
