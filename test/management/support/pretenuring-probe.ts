import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from '../../../src/server/create-server.ts';

/**
 * Run with the flags allocation-site-pretenuring.test.ts gives it. With `server` as its argument it starts and closes a
 * real server first. It then allocates from one site objects that all stay alive, which V8's
 * allocation-site pretenuring answers by allocating that site's next objects in the old
 * generation; it prints whether a fresh object from the site was still young at the end.
 * V8 decides only at a scavenge of a young generation at its largest size, so the flags fix
 * that size at 1 MB and the probe scavenges after each round: the decision then comes
 * within a few rounds.
 */
const inYoungGeneration = new Function('o', 'return %InYoungGeneration(o)') as (o: object) => boolean;
const scavenge = (globalThis as unknown as { gc: (options: { type: 'minor' }) => void }).gc;

if (process.argv[2] === 'server') {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-pretenuring-'));
  const server = await createServer({ dataDir, port: 0, authKey: 'probe-auth-key-0123456789abcdef0123456789', log: () => undefined });
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

function make(i: number): { a: number; b: number[] } {
  return { a: i, b: [i] };
}

const kept: object[] = [];
let young = true;
for (let round = 0; round < 20 && young; round++) {
  for (let i = 0; i < 5000; i++) kept.push(make(i));
  scavenge({ type: 'minor' });
  young = inYoungGeneration(make(-1));
}
process.stdout.write(JSON.stringify({ young, kept: kept.length }));
