import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dataPlaneMount } from '../../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../../src/server/create-server.ts';
import type { ConfigStore } from '../../../src/store/config-store.ts';
import { openSqliteLogStore } from '../../../src/store/logs/index.ts';

/**
 * A real gateway whose only credential no longer decrypts (its authentication tag damaged in
 * config.json, as a corrupted file would be): using it throws an error that is none of the
 * data plane's own, which must come out as a 500 `internal_error` and a warning. Warnings
 * emitted while it runs are collected; `close` stops listening for them and removes everything.
 */
export async function gatewayWithUndecryptableCredential<T>(seed: (store: ConfigStore) => Promise<T>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-undecryptable-'));
  const start = () => createServer({ dataDir, port: 0, authKey: 'undecryptable-auth-key-0123456789abcdef', openLogStore: (dir) => openSqliteLogStore(dir), mountDataPlane: dataPlaneMount(), log: () => {} });
  const first = await start();
  const seeded = await seed(first.store);
  await first.close();
  const configFile = path.join(dataDir, 'config.json');
  const config = JSON.parse(readFileSync(configFile, 'utf8')) as { credentials: { sealed: string }[] };
  const [format, iv, , body] = config.credentials[0]!.sealed.split(':');
  config.credentials[0]!.sealed = [format, iv, Buffer.alloc(16).toString('base64'), body].join(':');
  writeFileSync(configFile, JSON.stringify(config));
  const server = await start();
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  return {
    server,
    seeded,
    warnings,
    close: async () => {
      process.off('warning', onWarning);
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
