import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dataPlaneMount } from '../src/dataplane/mount-data-plane.ts';
import { createServer } from '../src/server/create-server.ts';
import { openWorkerLogStore } from '../src/store/logs/index.ts';
import { announceListening } from './bench-child.ts';

/**
 * switchyard as the bench runs it: the real server (management plane, data plane, SQLite
 * request logs written by a worker thread, as `serve` runs them) in a fresh data directory,
 * one Group on ch02 in front of the substitute upstream, one credential and one AccessKey.
 */
const upstreamBase = process.argv[2];
if (upstreamBase === undefined) throw new Error('usage: switchyard-server.ts <upstream base URL>');

const AUTH_KEY = 'bench-auth-key-0123456789abcdef0123456789';
const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-'));
const server = await createServer({
  dataDir,
  port: 0,
  authKey: AUTH_KEY,
  openLogStore: (dir) => openWorkerLogStore(dir),
  mountDataPlane: dataPlaneMount(),
  log: () => {},
});
const group = await server.store.groups.create({ name: 'bench', channel: 'ch02', base_url: upstreamBase, models: [{ external: 'bench-model', upstream: 'bench-model' }] });
await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-bench-upstream' }, secretFields: ['api_key'] }]);
const key = await server.store.accessKeys.create({ name: 'bench', protocols: ['x-completions'] });

process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
announceListening({ port: server.port }, { authHeader: `Bearer ${key.value}`, managementAuthHeader: `Bearer ${AUTH_KEY}` });
