import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';
import { createDataPlaneHandler } from '../../../src/dataplane/handle-data-request.ts';
import { createUpgradeHandler } from '../../../src/dataplane/handle-websocket-upgrade.ts';
import { DEFAULT_DATA_PLANE_OPTIONS, type DataPlaneOptions } from '../../../src/dataplane/data-plane-deps.ts';
import { InFlightRequests } from '../../../src/dataplane/in-flight-requests.ts';
import { openLowdbConfigStore } from '../../../src/store/lowdb/index.ts';
import { openSqliteLogStore } from '../../../src/store/logs/index.ts';
import type { ConfigStore } from '../../../src/store/config-store.ts';
import type { SqliteLogStore } from '../../../src/store/logs/index.ts';
import { UpstreamClient, type UpstreamClientOptions } from '../../../src/upstream/index.ts';
import type { Clock } from '../../../src/store/clock.ts';

export interface RecordedUpstreamRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export interface Upstream {
  url: string;
  requests: RecordedUpstreamRequest[];
  close(): Promise<void>;
}

/** A substitute upstream on 127.0.0.1 that records what it receives and answers with `respond`. */
export async function startUpstream(respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>): Promise<Upstream> {
  const requests: RecordedUpstreamRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      // The gateway aborted the request mid-body (the tests that do this check why); nothing to record.
      return;
    }
    const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
    requests.push(recorded);
    await respond(recorded, res);
  });
  return { url: await listen(server), requests, close: () => closeServer(server) };
}

export interface Gateway {
  url: string;
  store: ConfigStore;
  logs: SqliteLogStore;
  /** The data plane's upstream client (its dispatchers are what configuration churn prunes). */
  upstream: UpstreamClient;
  dataDir: string;
  /** Client connections the server holds open: 0 once it has seen a client's close (its watchers told in the same event). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The data plane's options, the clock it reads (the system's unless a test moves its own), how
 * long the store holds cooldown verdicts before writing them (its default unless given), and its
 * upstream client's options (the defaults unless given).
 */
export type DataPlaneHarnessOptions = Partial<DataPlaneOptions> & { clock?: Clock; cooldownFlushMs?: number; upstreamOptions?: UpstreamClientOptions };

/** A substitute upstream and the data plane in front of it, both stopped when the test ends. */
export async function startUpstreamAndDataPlane(
  t: Test,
  respond: (req: RecordedUpstreamRequest, res: ServerResponse) => void | Promise<void>,
  options: DataPlaneHarnessOptions = {},
): Promise<{ upstream: Upstream; gw: Gateway }> {
  const upstream = await startUpstream(respond);
  const gw = await startDataPlane(options);
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  return { upstream, gw };
}

/** Longest `close` waits for handlers still running to write their records. */
const HANDLERS_SETTLE_MS = 5000;

/** The real data plane with real stores in a temporary data directory, on 127.0.0.1. */
export async function startDataPlane({ clock = Date.now, cooldownFlushMs, upstreamOptions, ...options }: DataPlaneHarnessOptions = {}): Promise<Gateway> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-dp-'));
  // As the server's mount has it: bodies spool inside the gateway's own data directory.
  const spoolDir = path.join(dataDir, 'spool');
  mkdirSync(spoolDir, { mode: 0o700 });
  const store = await openLowdbConfigStore(dataDir, cooldownFlushMs === undefined ? {} : { cooldownFlushMs });
  const logs = openSqliteLogStore(dataDir);
  const upstream = new UpstreamClient(upstreamOptions);
  const inFlight = new InFlightRequests();
  const deps = { store, logs, upstream, clock, inFlight, options: { ...DEFAULT_DATA_PLANE_OPTIONS, spoolDir, ...options } };
  const handler = createDataPlaneHandler(deps);
  const upgrade = createUpgradeHandler(deps);
  const server = createServer((req, res) => void handler(req, res));
  server.on('upgrade', (req, socket, head) => void upgrade(req, socket, head));
  const url = await listen(server);
  return {
    url,
    store,
    logs,
    upstream,
    dataDir,
    connections: () => new Promise((resolve, reject) => server.getConnections((err, count) => (err ? reject(err) : resolve(count)))),
    async close() {
      // As the server's shutdown: open sessions end (and write their records) before the log store closes.
      await Promise.all([closeServer(server), upgrade.close()]);
      await upstream.destroy();
      // As the server's shutdown: handlers still running (a client that left) write their records first; bounded, so a hung one fails its test rather than this close.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([inFlight.settled(), new Promise<void>((resolve) => (timer = setTimeout(resolve, HANDLERS_SETTLE_MS)))]).finally(() => clearTimeout(timer));
      await logs.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A Group on `channel` pointing at `baseUrl`, one API key credential, and an AccessKey. */
export async function seedRoute(store: ConfigStore, o: { channel: string; baseUrl: string; models: { external: string; upstream: string }[]; protocols: string[]; upstreamKeys?: string[]; priority?: number; recordBody?: boolean; quota?: Parameters<ConfigStore['accessKeys']['create']>[0]['quota'] }) {
  const group = await store.groups.create({ name: `g-${o.channel}-${o.priority ?? 0}`, channel: o.channel, base_url: o.baseUrl, models: o.models, priority: o.priority ?? 0 });
  await store.credentials.createMany(
    group.id,
    (o.upstreamKeys ?? ['sk-upstream-1']).map((k) => ({ kind: 'api_key', values: { api_key: k }, secretFields: ['api_key'] })),
  );
  const key = await store.accessKeys.create({ name: 'client', protocols: o.protocols, record_request_body: o.recordBody ?? false, quota: o.quota ?? null });
  return { group, key: key.record, keyValue: key.value };
}
