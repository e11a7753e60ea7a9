import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bundleServer } from '../build/bundle.mjs';

/** Longest a child lives, so that a crashed parent never leaves it running. */
const CHILD_LIFETIME_MS = 15 * 60_000;

export interface BenchChild {
  url: string;
  pid: number;
  /** Extra fields the child announced besides its port. */
  announced: Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * Compiles a bench entry point to plain JavaScript in bench/.build/, as `npm start` runs the
 * gateway: the TypeScript loader's own memory and hooks stay out of the figures.
 */
function compile(script: URL): Promise<string> {
  return bundleServer(script, path.join(path.dirname(fileURLToPath(script)), '.build'));
}

/** Starts a bench server in its own process (so its memory is its own) and waits for its port. */
export async function forkBenchChild(script: URL, args: string[] = [], execArgv: string[] = []): Promise<BenchChild> {
  return forkBuiltChild(await compile(script), args, execArgv);
}

/** forkBenchChild for a server already bundled (a build of other code, to compare with this one). */
export async function forkBuiltChild(file: string, args: string[] = [], execArgv: string[] = []): Promise<BenchChild> {
  const child: ChildProcess = fork(file, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [message] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`${file} exited with ${String(code)} before listening`);
    }),
  ])) as [{ port: number } & Record<string, unknown>];
  return {
    url: `http://127.0.0.1:${message.port}`,
    pid: child.pid!,
    announced: message,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Called by a child once its server listens: tells the parent the port, exits with the parent. */
export function announceListening(server: Server | { port: number }, extra: Record<string, unknown> = {}): void {
  const port = 'port' in server ? server.port : (server.address() as AddressInfo).port;
  process.send?.({ ...extra, port });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
  setTimeout(() => process.exit(0), CHILD_LIFETIME_MS).unref();
}

/** Peak resident set size of a process (Linux VmHWM), in bytes; undefined where unavailable. */
export function peakRssBytes(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}
