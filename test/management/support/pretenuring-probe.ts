import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from '../../../src/server/create-server.ts';

/**
 * Run with --allow-natives-syntax. With `server` as its argument it starts and closes a real
 * server first. It then allocates from one site objects that all stay alive, which V8's
 * allocation-site pretenuring answers by allocating that site's next objects in the old
 * generation; it prints whether a fresh object from the site is still young.
 */
const inYoungGeneration = new Function('o', 'return %InYoungGeneration(o)') as (o: object) => boolean;

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
for (let i = 0; i < 800_000; i++) kept.push(make(i));
process.stdout.write(JSON.stringify({ young: inYoungGeneration(make(1)), kept: kept.length }));
