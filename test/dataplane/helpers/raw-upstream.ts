import type { Test } from 'tap';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startDataPlane, type Gateway } from './data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup } from './dataplane-scenarios.ts';

// A substitute upstream on raw sockets, for answers an HTTP server would not write (broken
// framing, malformed heads), and routes of two client styles in front of it.

/** Writes `answer` to the socket of each request the raw upstream reads (whole head and body). */
export type Answer = (socket: net.Socket) => void;

export async function rawUpstream(t: Test, answer: Answer): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length:\s*(\d+)/i.exec(buffered.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = buffered.subarray(end + 4 + length);
      requests++;
      answer(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

export interface Style {
  name: string;
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  codeOf: (t: Test, body: unknown) => unknown;
}

export const COMPLETIONS: Style = {
  name: 'completions',
  protocol: 'x-completions',
  channel: 'ch02',
  path: '/v1/chat/completions',
  body: { model: 'team-m', messages: [{ role: 'user', content: 'hi' }] },
  codeOf: (t, body) => {
    t.match(body, { error: { message: String, type: String, param: null } }, 'the openai error shape');
    return (body as { error: { code: unknown } }).error.code;
  },
};

export const MESSAGES: Style = {
  name: 'messages',
  protocol: 'x-messages',
  channel: 'ch14',
  path: '/v1/messages',
  body: { model: 'team-m', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  codeOf: (t, body) => {
    t.match(body, { type: 'error', error: { type: String, message: String } }, 'the messages error shape');
    return (body as { error: { details: { error_code: unknown } } }).error.details.error_code;
  },
};

/** The style's route with two credentials (a failover would show as a second upstream request). */
export async function rig(t: Test, style: Style, answer: Answer): Promise<{ gw: Gateway; keyValue: string; requests: () => number; send: (extra?: Record<string, unknown>) => Promise<Response> }> {
  const upstream = await rawUpstream(t, answer);
  const gw = await startDataPlane();
  t.teardown(() => gw.close());
  await seedGroup(gw.store, { channel: style.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-first-000001', 'sk-second-00002'] });
  const { keyValue } = await createKey(gw.store, { protocols: [style.protocol] });
  const send = (extra: Record<string, unknown> = {}) => fetch(`${gw.url}${style.path}`, { method: 'POST', headers: { ...clientAuthHeaders(style.protocol, keyValue), 'content-type': 'application/json' }, body: JSON.stringify({ ...style.body, ...extra }) });
  return { gw, keyValue, requests: upstream.requests, send };
}
