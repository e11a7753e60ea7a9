import { spawn } from 'node:child_process';
import { REPO_ROOT } from './repo-copy.ts';

export interface ServeProcess {
  /** The listening URL; rejects when the process exits before it listens. */
  url: Promise<string>;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
}

/** `switchyard serve` from source as its own process, with no AUTH_KEY unless `env` gives one. */
export function spawnServe(args: string[], env: Record<string, string | undefined> = {}): ServeProcess {
  const child = spawn(process.execPath, ['--import=tsx', 'src/cli/main.ts', 'serve', ...args], { cwd: REPO_ROOT, env: { ...process.env, AUTH_KEY: undefined, ...env } });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /switchyard (http:\/\/\S+) /.exec(stdout);
      if (m?.[1]) resolve(m[1]);
    });
    void exit.then(({ code }) => reject(new Error(`serve exited with ${code} before listening:\n${stderr}`)));
  });
  // Tests of a failed start await `exit` only.
  url.catch(() => {});
  return { url, exit, stderr: () => stderr, kill: (s) => child.kill(s) };
}
