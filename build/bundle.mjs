// Plain JavaScript, so that bin/switchyard.js can bundle before it serves without loading tsx.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, stop } from 'esbuild';

/** Worker entry points the server starts; bundled next to it, where start-log-writer.ts looks for them. */
const WORKER_ENTRIES = [new URL('../src/store/logs/log-writer-worker.ts', import.meta.url)];

/**
 * Bundles a server entry point and the workers it starts into `outdir` as plain JavaScript
 * (`<name>.mjs`; dependencies stay in node_modules). Running the bundle instead of the sources
 * under tsx saves the loader's threads and transpiled copies: about 100 MB of peak RSS here.
 * Stops esbuild's service process afterwards (a later call starts it again), so that a
 * process that goes on to serve keeps no bundler beside it.
 *
 * @param {URL} entry
 * @param {string} outdir
 * @param {string} [name]
 * @returns {Promise<string>} the path of the entry's bundle
 */
export async function bundleServer(entry, outdir, name = path.basename(fileURLToPath(entry), '.ts')) {
  const entryPoints = [
    { in: fileURLToPath(entry), out: name },
    ...WORKER_ENTRIES.map((url) => ({ in: fileURLToPath(url), out: path.basename(fileURLToPath(url), '.ts') })),
  ];
  try {
    await build({ entryPoints, outdir, outExtension: { '.js': '.mjs' }, bundle: true, packages: 'external', platform: 'node', format: 'esm', target: 'node20', logLevel: 'error' });
  } finally {
    await stop();
  }
  return path.join(outdir, `${name}.mjs`);
}
