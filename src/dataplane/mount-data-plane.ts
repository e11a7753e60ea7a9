import path from 'node:path';
import type { DataPlaneMount } from '../server/create-server.ts';
import { UpstreamClient } from '../upstream/index.ts';
import { DEFAULT_DATA_PLANE_OPTIONS, type DataPlaneOptions } from './data-plane-deps.ts';
import { createDataPlaneHandler } from './handle-data-request.ts';
import { createUpgradeHandler } from './handle-websocket-upgrade.ts';
import { resetSpoolDir } from './reset-spool-dir.ts';
import { InFlightRequests } from './in-flight-requests.ts';
import { routeTable } from '../handlers/compile-route-table.ts';
import { parserFailureAnswer } from './parser-failure-answer.ts';
import { loggedRequestId } from './logged-request-id.ts';

/**
 * Mounts the data plane beside the management plane: the server hands every path outside
 * /api straight to it (no Koa on the hot path), and WebSocket upgrades to WebSocket routes
 * to the socket relay.
 */
export function dataPlaneMount(options: Partial<DataPlaneOptions> = {}): DataPlaneMount {
  return async (_app, { store, logs, clock, log, dataDir }) => {
    // In the data directory rather than the system's: bodies may hold what clients sent in confidence.
    const spoolDir = options.spoolDir ?? path.join(dataDir, 'spool');
    await resetSpoolDir(spoolDir);
    const upstream = new UpstreamClient();
    const inFlight = new InFlightRequests();
    const deps = { store, logs, upstream, clock, options: { ...DEFAULT_DATA_PLANE_OPTIONS, ...options, spoolDir }, inFlight };
    const handle = createDataPlaneHandler(deps);
    // Before the server listens: a call naming an object created before the restart finds it remembered.
    await handle.ready.catch((error: unknown) => {
      log(`switchyard: the stored objects remembered before this start could not be read (${error instanceof Error ? error.message : String(error)}): calls naming them are routed as any call, open to any key, and background responses among them are not billed`);
    });
    const upgrade = createUpgradeHandler(deps);
    const routes = routeTable();
    return {
      request: (req, res) => void handle(req, res),
      upgrade: (req, socket, head) => void upgrade(req, socket, head),
      servesUpgrade: (req) => upgrade.serves(req),
      parserFailure: (failure, head, req) => parserFailureAnswer(routes, failure, head, req && loggedRequestId(req)),
      endSessions: () => upgrade.close(),
      cutOff: () => inFlight.endAll('shutting_down', () => upstream.destroy()),
      close: async () => {
        await inFlight.settled();
        await upstream.close();
      },
    };
  };
}
