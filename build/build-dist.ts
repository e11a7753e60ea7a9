import { bundleServer } from './bundle.mjs';
import { DIST, whyDistUnwritable } from './dist-writable.mjs';

// `npm run build` (and `npm start` before it serves): the CLI bundled into dist/switchyard.mjs.
// A checkout where dist/ cannot be written (read-only, another user's) can still serve from its sources.
const fail = (reason: string) => {
  process.stderr.write(`switchyard: cannot build ${DIST} (${reason}); run \`node bin/switchyard.js serve\` instead\n`);
  process.exitCode = 1;
};
const unwritable = whyDistUnwritable();
if (unwritable !== undefined) fail(unwritable);
else {
  try {
    const bundle = await bundleServer(new URL('../src/cli/main.ts', import.meta.url), DIST, 'switchyard');
    process.stderr.write(`switchyard: built ${bundle}\n`);
  } catch (err) {
    // esbuild's failure lists its errors; the first says what went wrong.
    const first = (err as { errors?: Array<{ text?: string }> }).errors?.[0]?.text;
    fail(first ?? (err instanceof Error ? err.message.split('\n')[0]! : String(err)));
  }
}
