import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Koa from 'koa';
import { Lockout, type LockoutPolicy } from '../auth/lockout.ts';
import { CHANNEL_IDS, CREDENTIAL_KIND_IDS, PROTOCOL_IDS } from '../generated/index.ts';
import type { ServerLog } from '../http/error-middleware.ts';
import { SchemaValidator } from '../http/schema-validator.ts';
import type { ManagementDeps } from '../management/context.ts';
import type { CredentialFlowProvider } from '../management/credential-flows.ts';
import { createManagementApp } from '../management/management-app.ts';
import type { ModelDiscovery } from '../management/model-discovery.ts';
import { BUNDLED_PRICE_LIST, parsePriceList } from '../management/price-catalog.ts';
import type { PriceList } from '../generated/management/price-list.ts';
import priceListSchema from '../management/schemas/price-list.json' with { type: 'json' };
import { systemClock, type Clock } from '../store/clock.ts';
import type { ConfigStore } from '../store/config-store.ts';
import type { LogStore } from '../store/logs/index.ts';
import { openLowdbConfigStore } from '../store/lowdb/index.ts';
import { MemoryLogStore } from '../store/memory/memory-log-store.ts';
import { loadAuthKey } from './auth-key.ts';
import { authKeyLine } from './auth-key-line.ts';
import { ClientKeepAlive } from './client-keep-alive.ts';
import { ConnectionDrain } from './connection-drain.ts';
import { quotaMeterFor } from '../dataplane/quota-meter.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { disableAllocationSitePretenuring } from './disable-allocation-site-pretenuring.ts';
import { hourlyRetention, startLogRetention, type RetentionSchedule } from './log-retention.ts';
import { packageVersion } from './package-version.ts';
import { CLIENT_SILENCE_MS } from '../http/json-body.ts';
import { serveUpgradeAsRequest } from '../http/serve-upgrade-as-request.ts';
import { serveConnectAsRequest } from '../http/serve-connect-as-request.ts';
import { closedAfterAnswer } from '../http/drain-after-answer.ts';
import { isConnectionGoneError } from '../http/connection-gone-error.ts';
import { holdContinue } from '../http/expect-continue.ts';
import { originForm } from './origin-form.ts';
import { isManagementPath } from '../management/management-path.ts';
import { answerClientErrors, type ParserFailureAnswer } from './answer-client-errors.ts';

/** What the data plane gets when the server mounts it. */
export interface DataPlaneMountDeps {
  store: ConfigStore;
  logs: LogStore;
  clock: Clock;
  log: ServerLog;
  dataDir: string;
}

/** What a mounted data plane hands back: WebSocket upgrades to serve, resources to release on close. */
export interface MountedDataPlane {
  /** Serves every request outside /api directly (the data plane's hot path skips Koa). */
  request?: (req: IncomingMessage, res: ServerResponse) => void;
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Whether `upgrade` serves this upgrade request; any other is served as the plain request it also is. */
  servesUpgrade?: (req: IncomingMessage) => boolean;
  /** Ends the WebSocket sessions, which the HTTP server neither ends nor finishes closing while they are open. */
  endSessions?: () => Promise<void>;
  /**
   * Told when the shutdown's grace ends, before the connections still open are cut: the
   * gateway, not their clients, ends those requests. Resolves once those have been answered (at most a second).
   */
  cutOff?: () => Promise<void>;
  /** Waits for every request's handler to finish (its log record written), then releases the rest (upstream connections). */
  close?: () => Promise<void>;
  /** Answers, in the data plane's error shape, a request outside /api that node's parser refused. */
  parserFailure?: ParserFailureAnswer;
}

export type DataPlaneMount = (app: Koa, deps: DataPlaneMountDeps) => MountedDataPlane | void | Promise<MountedDataPlane | void>;

export interface ServerOptions {
  dataDir: string;
  /** Default 127.0.0.1: exposing the gateway is an explicit choice. */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** Default: AUTH_KEY of `env`, else <data>/auth_key (generated on first start). */
  authKey?: string;
  env?: Readonly<Record<string, string | undefined>>;
  clock?: Clock;
  /** The request-log and usage store; opened with `openLogStore`, else kept in memory. */
  logStore?: LogStore;
  openLogStore?: (dataDir: string) => LogStore | Promise<LogStore>;
  /** Mounts the data plane after the management plane (it sees every path but /api). */
  mountDataPlane?: DataPlaneMount;
  fetch?: typeof fetch;
  log?: ServerLog;
  lockoutPolicy?: LockoutPolicy;
  modelDiscovery?: ModelDiscovery;
  credentialFlows?: CredentialFlowProvider;
  version?: string;
  /** When log retention (`log_retention_days`) runs after the run at start. Default: hourly. */
  logRetentionSchedule?: RetentionSchedule;
  /** How long a shutdown lets requests in flight finish before it cuts their connections. Default 10 s. */
  shutdownGraceMs?: number;
}

export interface RunningServer {
  url: string;
  host: string;
  port: number;
  store: ConfigStore;
  logs: LogStore;
  /** Method and path pattern of every management operation, from the router. */
  managementRoutes(): Array<{ method: string; path: string }>;
  /** Stops accepting, lets requests in flight finish, then flushes and closes the stores. */
  close(): Promise<void>;
  /**
   * Ends the shutdown's grace now (starting the shutdown if need be): the requests still in
   * flight are ended as when it runs out. Resolves once their connections are cut; `close()`'s
   * promise then settles once their records and those already appended are written.
   */
  cutShort(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 10_000;
/**
 * How often node looks for requests past their headers deadline: its default, 30 s, let a
 * silent or slowloris head hold its connection up to 90 s. A pass over the connections with a
 * request under way, on a timer, off the request path.
 */
const CLIENT_SILENCE_CHECK_MS = 1000;

export async function createServer(options: ServerOptions): Promise<RunningServer> {
  disableAllocationSitePretenuring();
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dataDir = path.resolve(options.dataDir);
  // Exclusive for as long as the server runs: a second writer would lose acknowledged writes.
  const lock = await lockDataDir(dataDir);
  let store: ConfigStore | undefined;
  let logs: LogStore | undefined;
  try {
    const openStore = await openLowdbConfigStore(dataDir, { clock });
    store = openStore;
    const given = options.authKey !== undefined ? { origin: 'options' as const, value: options.authKey } : { origin: 'environment' as const, value: (options.env ?? process.env).AUTH_KEY };
    const source = await loadAuthKey(dataDir, given.value);
    log(authKeyLine(dataDir, source, given));
    const openLogs: LogStore = options.logStore ?? (options.openLogStore ? await options.openLogStore(dataDir) : new MemoryLogStore());
    logs = openLogs;
    // A config.json restored from an older backup, or started empty beside the logs, must not
    // give a new AccessKey the id of one whose records (and recorded bodies) the logs keep.
    const named = await openLogs.namedIds?.();
    if (named !== undefined) await openStore.reserveIds(named);

    const validator = new SchemaValidator({
      protocol_id: () => PROTOCOL_IDS,
      channel_id: () => CHANNEL_IDS,
      credential_kind_id: () => CREDENTIAL_KIND_IDS,
    });
    const keepAlive = new ClientKeepAlive(await openStore.settings.get());
    const deps: ManagementDeps = {
      store: openStore,
      logs,
      clock,
      validator,
      log,
      fetch: options.fetch ?? fetch,
      version: options.version ?? packageVersion(),
      startedAt: clock(),
      priceCatalog: parsePriceList(BUNDLED_PRICE_LIST, validator.compile<PriceList>(priceListSchema)),
      modelDiscovery: options.modelDiscovery,
      credentialFlows: options.credentialFlows,
      settingsSaved: (saved) => keepAlive.apply(saved),
      // The data plane's meter (one per log store): inspection counts the requests in flight as it does.
      quotaOf: (key, now) => quotaMeterFor(openLogs).status(key, now),
      requestLogHealth: () => ({ buffered: openLogs.buffered ?? 0, buffered_bytes: openLogs.bufferedBytes ?? 0, dropped: openLogs.dropped ?? 0, bodies_dropped: openLogs.bodiesDropped ?? 0 }),
    };
    const management = createManagementApp(deps, { authKey: source.authKey, lockout: new Lockout(clock, options.lockoutPolicy) });
    const app = new Koa();
    app.silent = true;
    // Koa reports here what the error middleware cannot catch, the connection's own errors among
    // them: a client that left mid-body is no failure of the gateway (the data plane logs none either).
    app.on('error', (err: Error, ctx?: Koa.Context) => {
      if (ctx === undefined || !isConnectionGoneError(err, ctx.req)) log(`switchyard: ${err.stack ?? err.message}`);
    });
    app.use(management.middleware);
    const dataPlane = options.mountDataPlane ? ((await options.mountDataPlane(app, { store: openStore, logs, clock, log, dataDir })) ?? {}) : {};

    const koa = app.callback();
    const dataRequest = dataPlane.request;
    // No deadline on a whole request (node's is 300 s): an upload that keeps coming is not cut.
    // The headers keep node's deadline, CLIENT_SILENCE_MS (a client slower gets a 408, no
    // record: answerClientErrors), checked every CLIENT_SILENCE_CHECK_MS.
    // A body that goes silent is bounded instead: the data plane answers it 408
    // (stream_idle_timeout_seconds), the management plane ends its connection (json-body.ts).
    const serve = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void => {
      // Sent after an answer that said `connection: close`, by a client that did not wait for the close.
      if (closedAfterAnswer(req.socket)) return void req.socket.destroy();
      drain.admit(res);
      const url = originForm(req);
      if (dataRequest === undefined || isManagementPath(url)) {
        // The management plane reads any body it is sent: nothing gained by holding the 100 back.
        if (expectsContinue) res.writeContinue();
        void koa(req, res);
      } else {
        if (expectsContinue) holdContinue(res);
        dataRequest(req, res);
      }
    };
    const server = createHttpServer({ requestTimeout: 0, headersTimeout: CLIENT_SILENCE_MS, connectionsCheckingInterval: CLIENT_SILENCE_CHECK_MS }, (req, res) => serve(req, res, false));
    keepAlive.serve(server);
    // `Expect: 100-continue`: without this listener node sends the 100 before any handler runs.
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => serve(req, res, true));
    const drain = new ConnectionDrain(server);
    answerClientErrors(server, dataRequest === undefined ? undefined : dataPlane.parserFailure, log);
    const { upgrade, servesUpgrade } = dataPlane;
    // What throws in an event listener of the server ends the process: a choice that fails on
    // the client's request leaves its upgrade to the plain request's path, which answers any target.
    const servedAsUpgrade = (req: IncomingMessage): boolean => {
      try {
        return servesUpgrade?.(req) === true;
      } catch (err) {
        log(`switchyard: choosing how to serve an upgrade failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        return false;
      }
    };
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      originForm(req);
      if (upgrade !== undefined && servedAsUpgrade(req)) upgrade(req, socket, head);
      else serveUpgradeAsRequest(server, req, socket, head);
    });
    server.on('connect', (req: IncomingMessage, socket: Duplex) => serveConnectAsRequest(req, socket, (request, res) => serve(request, res, false)));
    await listen(server, options.port ?? 8080, options.host ?? '127.0.0.1');
    const address = server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const stopRetention = startLogRetention({ store: openStore, logs, clock, log }, options.logRetentionSchedule ?? hourlyRetention);
    let closing: Promise<void> | undefined;
    let cutting: Promise<void> | undefined;
    // Once: the grace running out and a second signal cut the same way.
    const cut = (): Promise<void> => (cutting ??= Promise.resolve(dataPlane.cutOff?.()).then(() => server.closeAllConnections()));
    const close = (): Promise<void> => {
      stopRetention();
      // The lock goes last, once no write is pending, whether or not the shutdown went cleanly.
      closing ??= shutdown(server, drain, openStore, openLogs, dataPlane, cut, options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS).finally(() => lock.release());
      return closing;
    };
    return {
      url: `http://${host}:${address.port}`,
      host: address.address,
      port: address.port,
      store: openStore,
      logs: openLogs,
      managementRoutes: management.routes,
      close,
      cutShort() {
        // Its failure is close()'s to report.
        close().catch(() => undefined);
        return cut();
      },
    };
  } catch (err) {
    await Promise.allSettled([store?.close(), logs?.close()]);
    // The start's own error is the one to report.
    await lock.release().catch(() => undefined);
    throw err;
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

async function shutdown(
  server: Server,
  drain: ConnectionDrain,
  store: ConfigStore,
  logs: LogStore,
  dataPlane: MountedDataPlane,
  cut: () => Promise<void>,
  graceMs: number,
): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  drain.start();
  const force = setTimeout(() => void cut(), graceMs);
  // Alongside, not after: the server's close also waits for upgraded (WebSocket) sockets, which
  // only the data plane ends.
  await Promise.all([closed, dataPlane.endSessions?.()]);
  clearTimeout(force);
  // After every request, so that a failover attempt late in the grace period still has its upstream client.
  await dataPlane.close?.();
  // Requests and sessions are done, so every write they started is queued; closing waits for them.
  // Each store is closed whatever the other does, and each failure is reported.
  const [config, requestLogs] = await Promise.allSettled([store.close(), logs.close()]);
  const failures = [
    ...(config.status === 'rejected' ? [`config store: ${messageOf(config.reason)}`] : []),
    ...(requestLogs.status === 'rejected' ? [`request logs: ${messageOf(requestLogs.reason)}`] : []),
  ];
  if (failures.length > 0) {
    const reasons = [config, requestLogs].flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    throw new AggregateError(reasons, `closing the stores failed: ${failures.join('; ')}`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
