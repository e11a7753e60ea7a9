import type { DataPlaneMount } from '../server/create-server.ts';
import { UpstreamClient } from '../upstream/index.ts';
import { DEFAULT_DATA_PLANE_OPTIONS, type DataPlaneOptions } from './data-plane-deps.ts';
import { createDataPlaneHandler } from './handle-data-request.ts';
import { createUpgradeHandler } from './handle-websocket-upgrade.ts';

/**
 * Mounts the data plane beside the management plane: the server hands every path outside
 * /api straight to it (no Koa on the hot path), and WebSocket upgrades to the socket relay.
 */
export function dataPlaneMount(options: Partial<DataPlaneOptions> = {}): DataPlaneMount {
  return (_app, { store, logs, clock }) => {
    const upstream = new UpstreamClient();
    const deps = { store, logs, upstream, clock, options: { ...DEFAULT_DATA_PLANE_OPTIONS, ...options } };
    const handle = createDataPlaneHandler(deps);
    const upgrade = createUpgradeHandler(deps);
    return {
      request: (req, res) => void handle(req, res),
      upgrade: (req, socket, head) => void upgrade(req, socket, head),
      close: () => upstream.close(),
    };
  };
}
