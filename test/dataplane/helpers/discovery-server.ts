import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { upstreamModelDiscovery } from '../../../src/adapters/discovery/upstream-model-discovery.ts';
import { createServer, type ServerOptions } from '../../../src/server/create-server.ts';
import { UpstreamClient } from '../../../src/upstream/index.ts';

/**
 * The whole server with real upstream model discovery (the data plane harness has none), in a
 * temporary data directory removed at the test's end; `options` add to it (a data plane, a log store).
 */
export async function startDiscoveryServer(t: Test, authKey: string, options: Partial<ServerOptions> = {}) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-discovery-'));
  const client = new UpstreamClient();
  const server = await createServer({ dataDir, port: 0, authKey, modelDiscovery: upstreamModelDiscovery(client), log: () => {}, ...options });
  t.teardown(async () => {
    await server.close();
    await client.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return server;
}

/** The management API of the server at `url` with the AUTH_KEY: a write carries a new Idempotency-Key. */
export function managementApi(url: string, authKey: string) {
  return async (method: string, p: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${authKey}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() });
    const res = await fetch(`${url}${p}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: (await res.json()) as { code: number | string; data: Record<string, any> } };
  };
}
