import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { compileRouteTable, matchRoute } from '../handlers/compile-route-table.ts';
import { upstreamRequestHeaders } from '../upstream/index.ts';
import { checkAccessKey } from './check-access-key.ts';
import { quotaMeterFor } from './quota-meter.ts';
import { ConfigSnapshot } from './config-snapshot.ts';
import { CredentialPool, verdictFor } from './credential-pool.ts';
import { DataPlaneError } from './data-plane-error.ts';
import type { DataPlaneDeps } from './data-plane-deps.ts';
import { newLogDraft } from './log-draft.ts';
import { attemptOrder, planCandidates, refusalFor } from './plan-candidates.ts';
import { presentedAccessKey } from './present-access-key.ts';
import { renderErrorBody } from './render-error-body.ts';
import { GATEWAY_REQUEST_ID_HEADER } from './request-id-headers.ts';
import { setUpstreamCredential, upstreamUrl } from './upstream-target.ts';
import { newRequestId } from './new-request-id.ts';

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void>;

/**
 * WebSocket operations (x-live sessions, realtime transcription): authenticated and routed
 * like any request, then the client socket is joined to an upstream socket and frames pass
 * through both ways untouched. Refusals answer the upgrade with an HTTP error before joining.
 */
export function createUpgradeHandler(deps: DataPlaneDeps): UpgradeHandler {
  const routes = compileRouteTable();
  const pool = new CredentialPool(deps.store.credentials);
  const snapshot = new ConfigSnapshot(deps.store);
  const quota = quotaMeterFor(deps.logs);
  const wss = new WebSocketServer({ noServer: true });

  return async function upgrade(req, socket, head) {
    const started = deps.clock();
    const requestId = newRequestId();
    const log = newLogDraft(requestId, started);
    let style: 'completions' | 'messages' | 'generate' = 'completions';
    try {
      const url = new URL(req.url ?? '/', 'http://gateway.invalid');
      const match = matchRoute(routes, 'GET', url.pathname);
      if (!match.found || match.target.kind !== 'operation' || match.target.operation.body !== 'websocket') throw new DataPlaneError('route_not_found');
      const op = match.target.operation;
      style = op.error_style;
      log.protocol = op.protocol;
      log.operation = op.id;
      const presented = presentedAccessKey(req.headers, url.searchParams);
      url.searchParams.delete('key');
      const key = presented === undefined ? undefined : await snapshot.accessKey(presented);
      if (!key) throw new DataPlaneError('access_key_invalid');
      log.access_key_id = key.id;
      checkAccessKey(key, op.protocol, started);
      await quota.enforce(key, started);
      const model = url.searchParams.get('model') ?? undefined;
      if (model === undefined) throw new DataPlaneError('model_missing', 'Pass the model as the `model` query parameter.');
      log.external_model = model;
      const snap = await snapshot.current();
      const candidates = planCandidates({ protocol: op.protocol, operation: op.id, model, key, groups: snap.groupsByModel.get(model) ?? [] });
      const ordered = attemptOrder(candidates);
      if (ordered.length === 0) {
        const r = refusalFor(candidates, model);
        throw new DataPlaneError(r.code, r.detail);
      }
      const settings = snap.settings;
      for (const candidate of ordered) {
        for (const credential of pool.usable(candidate.group, snap.credentialsByGroup.get(candidate.group.id) ?? [], deps.clock())) {
          const secret = await pool.secretOf(credential);
          if (secret === undefined) continue;
          const headers = upstreamRequestHeaders(req.headers);
          for (const h of ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'upgrade', 'connection']) delete headers[h];
          setUpstreamCredential(headers, op.protocol, secret);
          const query = new URLSearchParams(url.searchParams);
          if (candidate.upstream_model !== null) query.set('model', candidate.upstream_model);
          const search = query.toString();
          const target = upstreamUrl(candidate.group.base_url ?? '', op.upstream_path, match.params, candidate.upstream_model, search ? `?${search}` : '').replace(/^http/, 'ws');
          log.attempts.push({ credential_id: String(credential.id), group_id: String(candidate.group.id), status: null, error_code: null });
          const opened = await openUpstream(target, headers as Record<string, string>);
          const attempt = log.attempts[log.attempts.length - 1]!;
          attempt.status = opened.status;
          if (!opened.socket) {
            attempt.error_code = opened.status === null ? 'connect_failed' : `upstream_${opened.status}`;
            await pool.apply(credential, verdictFor(opened.status, undefined, settings.credential_cooldown_seconds), deps.clock());
            continue;
          }
          log.group_id = String(candidate.group.id);
          log.channel = candidate.group.channel;
          log.credential_id = String(credential.id);
          log.upstream_model = candidate.upstream_model;
          if (candidate.resolution.ok) (log.route_mode = candidate.resolution.declared), (log.effective = candidate.resolution.effective);
          log.status = 101;
          await join(wss, req, socket, head, opened.socket, log, deps.clock);
          return;
        }
      }
      throw new DataPlaneError('no_available_credential');
    } catch (err) {
      const failure = err instanceof DataPlaneError ? err : new DataPlaneError('upstream_unreachable');
      log.status = failure.status;
      log.error_code = failure.code;
      const body = renderErrorBody(style, failure.status, failure.code, failure.message);
      socket.end(`HTTP/1.1 ${failure.status} Error\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n${GATEWAY_REQUEST_ID_HEADER}: ${requestId}\r\nconnection: close\r\n\r\n${body}`);
    } finally {
      log.attempt_count = log.attempts.length;
      log.timings.duration_ms = deps.clock() - started;
      quota.record(log);
      deps.logs.append(log);
    }
  };
}

function openUpstream(url: string, headers: Record<string, string>): Promise<{ socket?: WebSocket; status: number | null }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve({ socket: ws, status: 101 }));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve({ status: res.statusCode ?? null });
    });
    ws.once('error', () => resolve({ status: null }));
  });
}

/** Completes the client upgrade and relays frames until either side closes; then logs. */
function join(wss: WebSocketServer, req: IncomingMessage, socket: Duplex, head: Buffer, upstream: WebSocket, log: ReturnType<typeof newLogDraft>, clock: () => number): Promise<void> {
  return new Promise((resolve) => {
    wss.handleUpgrade(req, socket, head, (client) => {
      log.timings.ttfb_ms = clock() - log.timings.started_at;
      const relay = (to: WebSocket) => (data: RawData, isBinary: boolean) => {
        if (to.readyState === WebSocket.OPEN) to.send(data, { binary: isBinary });
      };
      client.on('message', relay(upstream));
      upstream.on('message', relay(client));
      let done = false;
      const finish = (code: number, reason: Buffer, byClient: boolean) => {
        if (done) return;
        done = true;
        log.client_aborted = byClient && code !== 1000;
        const closeCode = code >= 1000 && code < 5000 && code !== 1005 && code !== 1006 ? code : 1000;
        for (const ws of [client, upstream]) if (ws.readyState === WebSocket.OPEN) ws.close(closeCode, reason);
        resolve();
      };
      client.on('close', (code, reason) => finish(code, reason, true));
      upstream.on('close', (code, reason) => finish(code, reason, false));
      client.on('error', () => finish(1011, Buffer.alloc(0), true));
      upstream.on('error', () => finish(1011, Buffer.alloc(0), false));
    });
  });
}
