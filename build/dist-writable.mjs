// Plain JavaScript, so that bin/switchyard.js can check before it loads tsx or esbuild.
import { accessSync, constants, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the bundles go: dist/ beside build/. */
export const DIST = fileURLToPath(new URL('../dist/', import.meta.url));

/**
 * Why dist/ or a bundle in it cannot be written (a read-only checkout, another user's, a plain
 * file in its place), or undefined when they can. Checked before esbuild runs, whose own report
 * of a failed write is several blocks on stderr.
 *
 * @returns {string | undefined}
 */
export function whyDistUnwritable() {
  try {
    mkdirSync(DIST, { recursive: true });
    accessSync(DIST, constants.W_OK);
    for (const file of readdirSync(DIST)) if (file.endsWith('.mjs')) accessSync(path.join(DIST, file), constants.W_OK);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
