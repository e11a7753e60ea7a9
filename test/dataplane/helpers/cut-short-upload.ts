import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Test } from 'tap';
import type { LogRecord } from '../../../src/store/logs/index.ts';
import { startUpstream, startDataPlane, type DataPlaneHarnessOptions, type Gateway } from './data-plane-harness.ts';
import { createKey, seedGroup } from './dataplane-scenarios.ts';

/** Where a body cut short is sent: the route, its body's content type, and the Group that serves it. */
export interface UploadRoute {
  path: string;
  contentType: string;
  channel: string;
  protocol: string;
  /** The model the Group serves. */
  model: string;
}

export interface UploadKey {
  id: number;
  value: string;
  /** Whether the key records request bodies. */
  records: boolean;
}

export interface UploadAnswer {
  /** 0 when there is none. */
  status: number;
  requestId?: string;
}

/** A Group serving `route` with an upstream that answers 200 `{}`, and two AccessKeys for it: one recording request bodies, one not. */
export async function cutShortGateway(t: Test, route: UploadRoute, options: DataPlaneHarnessOptions): Promise<{ gw: Gateway; recording: UploadKey; silent: UploadKey; upstreamRequests: () => number }> {
  const upstream = await startUpstream((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  const gw = await startDataPlane(options);
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  await seedGroup(gw.store, { channel: route.channel, baseUrl: upstream.url, models: [{ external: route.model, upstream: `vendor-${route.model}` }], secrets: ['sk-a'] });
  const recording = await createKey(gw.store, { name: 'recording', protocols: [route.protocol], record_request_body: true });
  const silent = await createKey(gw.store, { name: 'silent', protocols: [route.protocol], record_request_body: false });
  return {
    gw,
    recording: { id: recording.key.id, value: recording.keyValue, records: true },
    silent: { id: silent.key.id, value: silent.keyValue, records: false },
    upstreamRequests: () => upstream.requests.length,
  };
}

/** An upload whose body the test writes by hand; `answer` settles when the gateway's answer has ended, or the request fails. */
export function openUpload(gw: Gateway, route: UploadRoute, keyValue: string, framing: Record<string, string>): { req: ClientRequest; answer: Promise<UploadAnswer> } {
  const u = new URL(gw.url);
  const req = request({ host: u.hostname, port: u.port, path: route.path, method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': route.contentType, ...framing } });
  const answer = new Promise<UploadAnswer>((resolve) => {
    req.on('response', (res: IncomingMessage) => {
      const answered = { status: res.statusCode ?? 0, requestId: res.headers['x-switchyard-request-id'] as string | undefined };
      res.resume();
      res.on('end', () => resolve(answered));
      res.on('error', () => resolve(answered));
    });
    req.on('error', () => resolve({ status: 0 }));
  });
  return { req, answer };
}

/**
 * The record of a body cut short after `sent` (text): truncated for a key that records bodies,
 * nothing for one that does not. `someArrived`: the gateway read part of the body before it
 * failed (a chunk past the limit is not kept).
 */
export function checkRecorded(t: Test, record: LogRecord, records: boolean, sent: Buffer, originalBytes: number, someArrived = true): void {
  if (!records) return void t.notOk('request_body' in record, 'no body for a key that does not record');
  const recorded = record.request_body as { state: string; original_bytes: number; body: string; encoding?: string } | undefined;
  t.match(recorded, { state: 'truncated', original_bytes: originalBytes }, 'recorded truncated, its size the declared length (or with none what arrived)');
  t.equal(recorded?.encoding, undefined, 'as text');
  t.ok(recorded !== undefined && sent.toString('utf8').startsWith(recorded.body), 'the start of the body as sent');
  if (someArrived) t.ok(recorded !== undefined && recorded.body.length > 0, 'what arrived is kept');
}
