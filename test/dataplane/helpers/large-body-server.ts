import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dataPlaneMount } from '../../../src/dataplane/mount-data-plane.ts';
import { createServer } from '../../../src/server/create-server.ts';
import { openWorkerLogStore } from '../../../src/store/logs/index.ts';

/**
 * The real server in a process of its own, so that a test can read its memory: SQLite request
 * logs as `serve` writes them, `maxBodyBytes` raised to 1 GiB, one ch03 Group in front of the
 * upstream given as the first argument (whisper, ocr and tts models mapped to vendor names) and an
 * x-suite key. Prints one JSON line: port, key, data directory. Stops on SIGTERM.
 */
const upstreamBase = process.argv[2];
if (upstreamBase === undefined) throw new Error('usage: large-body-server.ts <upstream base URL>');
const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-large-body-'));
const server = await createServer({ dataDir, port: 0, authKey: 'large-body-auth-key-0123456789abcdef', openLogStore: (dir) => openWorkerLogStore(dir), mountDataPlane: dataPlaneMount({ maxBodyBytes: 1024 * 1024 * 1024 }), log: () => {} });
const models = ['whisper', 'ocr', 'tts'].map((m) => ({ external: m, upstream: `vendor-${m}` }));
const group = await server.store.groups.create({ name: 'large', channel: 'ch03', base_url: upstreamBase, models });
await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-large' }, secretFields: ['api_key'] }]);
const key = await server.store.accessKeys.create({ name: 'large', protocols: ['x-suite'], record_request_body: false, quota: null });
process.once('SIGTERM', () => {
  void server.close().finally(() => {
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
process.stdout.write(`${JSON.stringify({ port: server.port, key: key.value, dataDir })}\n`);
