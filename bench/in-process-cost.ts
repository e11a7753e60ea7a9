import { mkdtempSync, rmSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Duplex, type Readable } from 'node:stream';
import { DEFAULT_DATA_PLANE_OPTIONS } from '../src/dataplane/data-plane-deps.ts';
import { createDataPlaneHandler } from '../src/dataplane/handle-data-request.ts';
import { InFlightRequests } from '../src/dataplane/in-flight-requests.ts';
import { createServer } from '../src/server/create-server.ts';
import { openWorkerLogStore } from '../src/store/logs/index.ts';
import { UpstreamReply, type UpstreamClient } from '../src/upstream/index.ts';
import { floorHandler } from './floor-handler.ts';
import { median } from './median.ts';
import { completionBody, doneEvent, nonStreamingRequest, streamEvents, streamingRequest, usageEvent } from './completions-fixtures.ts';

/**
 * The data plane's own CPU time per request, in one process: requests and responses on
 * sockets that only count bytes, and an upstream client that answers from the bench's
 * fixtures (on the next turn, headers and body in one go, as undici hands over a small
 * reply). No kernel, no undici, no other process: what is left is switchyard's handler (with
 * its SQLite log store in its worker thread, as `serve` runs it) against the floor proxy's own
 * handler. Runs of one build differ by about 5 %, so it tells whether a change of about 1 µs
 * per request costs or saves; `npm run bench` remains the measure of the targets.
 */
const CONNECTIONS = 32;
const REQUESTS = Number(process.env['IN_PROCESS_REQUESTS'] ?? 50_000);
const ROUNDS = Number(process.env['IN_PROCESS_ROUNDS'] ?? 5);

const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-in-process-'));
const server = await createServer({ dataDir, port: 0, authKey: 'in-process-auth-key-0123456789abcdef0123', openLogStore: (dir) => openWorkerLogStore(dir), log: () => {} });
const group = await server.store.groups.create({ name: 'bench', channel: 'ch02', base_url: 'http://127.0.0.1:9', models: [{ external: 'bench-model', upstream: 'bench-model' }] });
await server.store.credentials.createMany(group.id, [{ kind: 'api_key', values: { api_key: 'sk-bench-upstream' }, secretFields: ['api_key'] }]);
const key = await server.store.accessKeys.create({ name: 'bench', protocols: ['x-completions'] });

const withUsage = Buffer.from(streamEvents.join('') + usageEvent + doneEvent);
const withoutUsage = Buffer.from(streamEvents.join('') + doneEvent);
const common = { 'x-request-id': 'up-bench', date: 'Thu, 26 Nov 2026 00:00:00 GMT', connection: 'keep-alive', 'keep-alive': 'timeout=60' };
const transport = { pause() {}, resume() {}, abort() {} };

/** Answers like the substitute upstream: usage in a stream only when the request asks for it. */
function answer(body: Buffer): Promise<UpstreamReply> {
  const stream = body.includes('"stream":true');
  return new Promise((resolve) => {
    setImmediate(() => {
      const headers = stream ? { 'content-type': 'text/event-stream', 'transfer-encoding': 'chunked', ...common } : { 'content-type': 'application/json', 'content-length': String(completionBody.length), ...common };
      const reply = new UpstreamReply(200, headers, transport);
      resolve(reply);
      // Bytes of its own, as a socket read gives: the relay may edit a block in place (dropping the usage chunk).
      reply.pushData(Buffer.from(stream ? (body.includes('include_usage') ? withUsage : withoutUsage) : completionBody));
      reply.pushEnd();
    });
  });
}

/** The upstream client's exchange, answered from the fixtures; a streamed body (the floor's) is read whole first, as undici would send it. */
const upstream = {
  exchange(request: { body?: unknown }) {
    const { body } = request;
    const reply = Buffer.isBuffer(body) ? answer(body) : readAll(body as Readable).then(answer);
    return { reply, abort() {} };
  },
  retain() {},
} as unknown as UpstreamClient;

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

type Handler = (req: IncomingMessage, res: ServerResponse) => unknown;

const switchyard: Handler = createDataPlaneHandler({ store: server.store, logs: server.logs, upstream, clock: Date.now, options: DEFAULT_DATA_PLANE_OPTIONS, inFlight: new InFlightRequests() });

/** The floor proxy's own handler, on the same sockets and upstream. */
const floor: Handler = floorHandler(upstream, 'http://127.0.0.1:9');

let bytesOut = 0;
/** A handler that refuses fast would look cheap: every answer must be the upstream's 200. */
let notOk = 0;

/** One request on its own socket; resolves when the response has finished. `sent` collects what the client got. */
function request(handler: Handler, body: string, sent?: Buffer[]): Promise<void> {
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      bytesOut += chunk.length;
      sent?.push(Buffer.from(chunk));
      callback();
    },
  });
  const req = new IncomingMessage(socket as never);
  req.method = 'POST';
  req.url = '/v1/chat/completions';
  req.headers = { host: '127.0.0.1', authorization: `Bearer ${key.value}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'keep-alive' };
  const res = new ServerResponse(req);
  res.assignSocket(socket as never);
  return new Promise((resolve) => {
    res.on('finish', () => {
      if (res.statusCode !== 200) notOk++;
      res.detachSocket(socket as never);
      resolve();
    });
    void handler(req, res);
    setImmediate(() => {
      req.push(Buffer.from(body));
      // As node's parser marks a whole message, so that the request is not taken for cut off.
      req.complete = true;
      req.push(null);
    });
  });
}

/** Microseconds per request with CONNECTIONS requests in flight. */
async function measure(handler: Handler, body: string, total: number): Promise<number> {
  let left = total;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) await request(handler, body);
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1000 / total;
}

/**
 * What a client of `handler` gets, checked after the timed rounds: the upstream's body, with
 * the usage chunk the gateway asked for dropped. A harness whose answers went wrong (say, a
 * fixture edited in place by a relay) would time another path than the bench's.
 */
async function checkAnswer(name: string, handler: Handler, body: string): Promise<void> {
  const sent: Buffer[] = [];
  await request(handler, body, sent);
  const received = Buffer.concat(sent);
  const expected = body === streamingRequest ? withoutUsage : completionBody;
  if (!received.includes(expected) || (body === streamingRequest && received.includes('"usage"'))) {
    throw new Error(`${name} answered other bytes than the upstream's: ${received.toString('utf8', 0, 400)}`);
  }
}

console.log(`in process: ${ROUNDS} rounds of ${REQUESTS} requests per target, ${CONNECTIONS} in flight; µs per request`);
for (const [scenario, body] of [['non-streaming', nonStreamingRequest], ['streaming', streamingRequest]] as const) {
  const figures = { floor: [] as number[], switchyard: [] as number[] };
  await measure(floor, body, REQUESTS / 2);
  await measure(switchyard, body, REQUESTS / 2);
  for (let round = 0; round < ROUNDS; round++) {
    figures.floor.push(await measure(floor, body, REQUESTS));
    figures.switchyard.push(await measure(switchyard, body, REQUESTS));
  }
  await checkAnswer('floor', floor, body);
  await checkAnswer('switchyard', switchyard, body);
  const [f, s] = [median(figures.floor), median(figures.switchyard)];
  console.log(`  ${scenario.padEnd(14)} floor ${f.toFixed(2)}  switchyard ${s.toFixed(2)}  switchyard's own ${(s - f).toFixed(2)}  (switchyard rounds: ${figures.switchyard.map((v) => v.toFixed(2)).join(' ')})`);
}
if (bytesOut === 0 || notOk > 0) throw new Error(`${notOk} answers were not 200, ${bytesOut} bytes written: the figures measure no proxying`);
await server.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
