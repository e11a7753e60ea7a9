import { execFile } from 'node:child_process';
import { REPO_ROOT } from './repo-copy.ts';

export interface CliRun {
  /** The exit status; null when the process was ended by a signal. */
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the switchyard CLI from the sources with `args`, and resolves however it exits.
 * Asynchronous, so that a gateway in this process answers the CLI's --url requests. Its
 * environment is this one with no AUTH_KEY nor tap's variables, then `env`.
 */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const options = { cwd: REPO_ROOT, env: { ...process.env, AUTH_KEY: '', TAP: undefined, TAP_CHILD_ID: undefined, ...env } };
    execFile(process.execPath, ['--import=tsx', 'src/cli/main.ts', ...args], options, (err, stdout, stderr) => {
      resolve({ status: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}
