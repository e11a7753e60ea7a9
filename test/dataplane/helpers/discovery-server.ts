import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { upstreamModelDiscovery } from '../../../src/adapters/discovery/upstream-model-discovery.ts';
import { createServer } from '../../../src/server/create-server.ts';
import { UpstreamClient } from '../../../src/upstream/index.ts';

/** The whole server with real upstream model discovery (the data plane harness has none), in a temporary data directory removed at the test's end. */
export async function startDiscoveryServer(t: Test, authKey: string) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-discovery-'));
  const client = new UpstreamClient();
  const server = await createServer({ dataDir, port: 0, authKey, modelDiscovery: upstreamModelDiscovery(client), log: () => {} });
  t.teardown(async () => {
    await server.close();
    await client.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return server;
}
