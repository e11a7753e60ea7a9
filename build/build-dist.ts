import { fileURLToPath } from 'node:url';
import { bundleServer } from './bundle.mjs';

/** `npm run build` (and `npm start` before it serves): the CLI bundled into dist/switchyard.mjs. */
const outdir = fileURLToPath(new URL('../dist/', import.meta.url));
try {
  const bundle = await bundleServer(new URL('../src/cli/main.ts', import.meta.url), outdir, 'switchyard');
  process.stderr.write(`switchyard: built ${bundle}\n`);
} catch (err) {
  // A checkout where dist/ cannot be written (read-only, another user's) can still serve from its sources.
  // esbuild's failure lists its errors; the first says what went wrong.
  const first = (err as { errors?: Array<{ text?: string }> }).errors?.[0]?.text;
  const reason = first ?? (err instanceof Error ? err.message.split('\n')[0] : String(err));
  process.stderr.write(`switchyard: cannot build ${outdir} (${reason}); run \`node bin/switchyard.js serve\` instead\n`);
  process.exitCode = 1;
}
