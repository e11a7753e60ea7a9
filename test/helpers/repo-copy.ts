import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

export const REPO_ROOT = path.resolve(new URL('../..', import.meta.url).pathname);

/** A throwaway copy of the parts of the checkout that codegen, the CLI and the tests need. */
export function copyRepo(): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-copy-'));
  for (const part of ['manifests', 'codegen', 'src', 'test', 'package.json', 'tsconfig.json']) {
    cpSync(path.join(REPO_ROOT, part), path.join(dir, part), { recursive: true });
  }
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs a TypeScript entry point of a checkout with the tsx loader. */
export function runTs(cwd: string, file: string, args: string[] = []): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import=tsx', file, ...args], { cwd, encoding: 'utf8', env: { ...process.env, TAP: undefined, TAP_CHILD_ID: undefined } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
