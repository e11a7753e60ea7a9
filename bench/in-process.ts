import { fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleServer } from '../build/bundle.mjs';

/**
 * `npm run bench:in-process`: bundles in-process-cost.ts as the bench bundles its servers (the
 * TypeScript loader's helpers would otherwise be measured too) and runs it. Arguments go to
 * node, so `npm run bench:in-process -- --cpu-prof` profiles the run.
 */
const entry = new URL('./in-process-cost.ts', import.meta.url);
const bundle = await bundleServer(entry, path.join(path.dirname(fileURLToPath(entry)), '.build'));
const child = fork(bundle, [], { execArgv: process.argv.slice(2), stdio: 'inherit' });
const [code] = (await once(child, 'exit')) as [number | null];
process.exitCode = code ?? 1;
