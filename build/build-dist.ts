import { fileURLToPath } from 'node:url';
import { bundleServer } from './bundle.mjs';

/** `npm run build` (and `npm start` before it serves): the CLI bundled into dist/switchyard.mjs. */
const outdir = fileURLToPath(new URL('../dist/', import.meta.url));
const bundle = await bundleServer(new URL('../src/cli/main.ts', import.meta.url), outdir, 'switchyard');
process.stderr.write(`switchyard: built ${bundle}\n`);
