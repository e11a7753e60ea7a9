import { spawn } from 'node:child_process';
import { REPO_ROOT } from './repo-copy.ts';

export interface ServeExit {
  code: number | null;
  /** The signal that killed it, when one did. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ServeProcess {
  /** The listening URL; rejects when the process exits before it listens. */
  url: Promise<string>;
  /** Resolves once stdout has printed something matching `pattern`; rejects if the process exits first. */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
  exit: Promise<ServeExit>;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
}

/** `switchyard serve` from source as its own process, with no AUTH_KEY unless `env` gives one. */
export function spawnServe(args: string[], env: Record<string, string | undefined> = {}): ServeProcess {
  const child = spawn(process.execPath, ['--import=tsx', 'src/cli/main.ts', 'serve', ...args], { cwd: REPO_ROOT, env: { ...process.env, AUTH_KEY: undefined, ...env } });
  let stdout = '';
  let stderr = '';
  const waiting = new Set<() => void>();
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const check of waiting) check();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': by then all it wrote has been read.
  const exit = new Promise<ServeExit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  const printed = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(stdout);
        if (m === null) return;
        waiting.delete(check);
        resolve(m);
      };
      waiting.add(check);
      check();
      void exit.then(({ code, signal }) => reject(new Error(`serve exited (${code ?? signal}) before printing ${pattern}:\n${stdout}\n${stderr}`)));
    });
  const url = printed(/switchyard (http:\/\/\S+) /).then((m) => m[1]!);
  // Tests of a failed start await `exit` only.
  url.catch(() => {});
  return { url, printed, exit, stderr: () => stderr, kill: (s) => child.kill(s) };
}
