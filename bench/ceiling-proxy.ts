import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jsonAttemptBody } from '../src/dataplane/body/index.ts';
import { DEFAULT_DATA_PLANE_OPTIONS } from '../src/dataplane/data-plane-deps.ts';
import { deliverUpstreamResponse } from '../src/dataplane/deliver-upstream-response.ts';
import { newLogDraft } from '../src/dataplane/log-draft.ts';
import { newRequestId } from '../src/dataplane/new-request-id.ts';
import { parseJsonText, readBody } from '../src/dataplane/read-body.ts';
import { DEFAULT_SETTINGS } from '../src/store/default-settings.ts';
import { openWorkerLogStore } from '../src/store/logs/index.ts';
import { UpstreamClient, upstreamRequestHeaders } from '../src/upstream/index.ts';
import { computeCost, requestStreamUsage, type TokenUsage } from '../src/usage/index.ts';
import { announceListening } from './bench-child.ts';

/**
 * The ceiling (BENCH_CEILING=1): the floor plus only the work that every request of a gateway
 * which logs usage must do, built from switchyard's own parts. It reads and parses the body
 * (the model is in it), asks a completions stream for usage, relays the answer with the data
 * plane's own deliverUpstreamResponse (usage read, the usage-only chunk it asked for dropped,
 * idle stream watched) and appends one log record through a WorkerLogStore, as `serve`
 * does. No AccessKey, routing, credential pool, quota or failover.
 * Its throughput against the floor's is the most any gateway of this design can reach here;
 * switchyard's against it is the cost of switchyard's own machinery.
 */
const upstreamBase = process.argv[2];
if (upstreamBase === undefined) throw new Error('usage: ceiling-proxy.ts <upstream base URL>');

const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-ceiling-'));
const logs = await openWorkerLogStore(dataDir);
const client = new UpstreamClient();
const CAPTURE_LIMIT_BYTES = 4 * 1024 * 1024;

const server = createServer((req, res) => {
  const started = Date.now();
  const requestId = newRequestId(started);
  readBody(req, DEFAULT_DATA_PLANE_OPTIONS.bufferedJsonBytes, (raw) => ({ raw, value: parseJsonText(raw.toString('utf8')) })).then(
    ({ raw, value }) => {
      const built = jsonAttemptBody(raw, value, null, requestStreamUsage);
      const headers = upstreamRequestHeaders(req.headers);
      headers['content-length'] = String(built.body.length);
      const exchange = client.exchange({ url: `${upstreamBase}${req.url ?? '/'}`, method: req.method ?? 'POST', headers, body: built.body });
      // One watch on the client for the request, as the data plane keeps: pointed at the relay once it runs.
      let onClientGone: (() => void) | undefined;
      res.on('close', () => onClientGone?.());
      exchange.reply.then(
        (reply) =>
          deliverUpstreamResponse(reply, {
            res,
            requestId,
            streamStyle: 'completions',
            streamEnd: 'completions',
            usageStyle: 'completions',
            dropUsageChunk: built.addedStreamUsage,
            captureResponseId: false,
            onResponseId: undefined,
            idleTimeoutMs: DEFAULT_SETTINGS.stream_idle_timeout_seconds * 1000,
            onFirstByte: () => {},
            captureLimitBytes: CAPTURE_LIMIT_BYTES,
            streamingOperation: false,
            onClientGone: (handler) => {
              onClientGone = handler;
            },
          }).then((outcome) => record(requestId, started, String(value['model']), reply.status, outcome.usage)),
        () => fail(res, 502),
      );
    },
    () => fail(res, 400),
  );
});

function record(requestId: string, started: number, model: string, status: number, usage: TokenUsage | undefined): void {
  const log = newLogDraft(requestId, started);
  log.access_key_id = 1;
  log.group_id = log.credential_id = '1';
  log.channel = 'ch02';
  log.protocol = 'x-completions';
  log.operation = 'chat-completions';
  log.route_mode = 'N';
  log.effective = 'native';
  log.external_model = log.upstream_model = model;
  log.status = status;
  log.attempts.push({ credential_id: '1', group_id: '1', status, error_code: null });
  log.attempt_count = 1;
  if (usage) {
    log.usage = usage;
    log.cost = computeCost(usage, undefined);
  }
  log.timings.duration_ms = Date.now() - started;
  logs.append(log);
}

function fail(res: ServerResponse, status: number): void {
  if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' });
  res.end('{"error":{"message":"ceiling proxy failure","type":"server_error"}}');
}

server.keepAliveTimeout = 60_000;
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
server.listen(0, '127.0.0.1', () => announceListening(server));
