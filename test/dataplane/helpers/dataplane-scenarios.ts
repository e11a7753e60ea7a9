import { request as httpRequest, createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHANNEL_IDS, CHANNELS, CREDENTIAL_KINDS, OPERATIONS, type ChannelId, type CredentialKindId, type OperationId } from '../../../src/generated/index.ts';
import { resolve } from '../../../src/engine/index.ts';
import type { ConfigStore, NewAccessKey } from '../../../src/store/config-store.ts';
import type { CredentialView, GroupRecord } from '../../../src/store/records.ts';
import type { LogRecord } from '../../../src/store/logs/index.ts';
import type { Gateway } from './data-plane-harness.ts';

// Scenario helpers for the data-plane behaviour tests: seeding Groups with the credential kind
// their channel declares, bounded waits, SSE reading, raw HTTP with arbitrary headers.

export type Operation = (typeof OPERATIONS)[OperationId];

/** Operations reached over plain HTTP (the WebSocket ones are tested elsewhere). */
export const HTTP_OPERATIONS: Operation[] = Object.values(OPERATIONS).filter((op) => op.body !== 'websocket');

/**
 * The channel each capability is tested on when the issue names one; every other capability
 * is tested on the first channel (ch01..ch35) whose declared route for it is native and whose
 * credential needs no authorization flow, so that a new endpoint is covered automatically.
 */
const PREFERRED_CHANNEL: Partial<Record<string, ChannelId>> = {
  RRA: 'ch31',
  'alpha-search': 'ch31',
  'x-embeddings': 'ch15',
  rerank: 'ch21',
  decisions: 'ch01',
  'x-suite': 'ch03',
};

export function staticKindOf(channel: string): CredentialKindId | undefined {
  const kinds = CHANNELS[channel as ChannelId]?.credential_kinds ?? [];
  return kinds.find((k) => CREDENTIAL_KINDS[k as CredentialKindId]?.flow === 'static') as CredentialKindId | undefined;
}

export function nativeChannelFor(op: Operation): ChannelId | undefined {
  const isNative = (channel: string) => {
    const answer = resolve({ protocol: op.protocol, operation: op.id, channel });
    return answer.ok && answer.effective === 'native' && staticKindOf(channel) !== undefined;
  };
  const preferred = PREFERRED_CHANNEL[op.capability];
  if (preferred !== undefined) return isNative(preferred) ? preferred : undefined;
  return CHANNEL_IDS.find(isNative);
}

export interface SeedGroupOptions {
  channel: string;
  baseUrl: string;
  models?: { external: string; upstream: string }[];
  /** Upstream secrets, one credential each, in this order. */
  secrets: string[];
  /** No credentials at all (`secrets` empty), for a channel whose credential kinds all need an authorization flow. */
  withoutCredentials?: boolean;
  priority?: number;
  weight?: number;
  name?: string;
}

let groupCounter = 0;

/** A Group with one credential per secret, of the kind the channel declares (fields filled in). */
export async function seedGroup(store: ConfigStore, o: SeedGroupOptions): Promise<{ group: GroupRecord; credentials: CredentialView[] }> {
  const kind = staticKindOf(o.channel);
  if (o.withoutCredentials && o.secrets.length > 0) throw new Error('secrets given for a Group without credentials');
  if (kind === undefined && !o.withoutCredentials) throw new Error(`${o.channel} has no static credential kind`);
  const group = await store.groups.create({
    name: o.name ?? `group-${o.channel}-${++groupCounter}`,
    channel: o.channel,
    base_url: o.baseUrl,
    models: o.models ?? [],
    priority: o.priority ?? 0,
    weight: o.weight ?? 1,
  });
  if (kind === undefined || o.withoutCredentials) return { group, credentials: [] };
  const decl = CREDENTIAL_KINDS[kind];
  const secretField = decl.fields.find((f) => f.secret && f.required)!.name;
  const outcomes = await store.credentials.createMany(
    group.id,
    o.secrets.map((secret) => {
      const values: Record<string, string> = {};
      for (const f of decl.fields) {
        if (!f.required) continue;
        values[f.name] = f.name === secretField ? secret : f.name === 'base_url' || f.name === 'endpoint' ? o.baseUrl : `${f.name}-value`;
      }
      return { kind, values, secretFields: decl.fields.filter((f) => f.secret).map((f) => f.name) };
    }),
  );
  const credentials = outcomes.map((x) => {
    if (!('created' in x)) throw new Error('duplicate credential in seed');
    return x.created;
  });
  return { group, credentials };
}

export async function createKey(store: ConfigStore, o: Partial<NewAccessKey> & { protocols: string[] }) {
  const created = await store.accessKeys.create({ name: o.name ?? 'client', record_request_body: false, quota: null, ...o });
  return { key: created.record, keyValue: created.value };
}

export async function credentialView(store: ConfigStore, groupId: number, id: number): Promise<CredentialView> {
  const view = await store.credentials.get(groupId, id);
  if (!view) throw new Error(`credential ${id} not found`);
  return view;
}

/** Rejects after `ms` with `what` in the message; the bound on every wait in these tests. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  settled: boolean;
}

export function deferred<T = void>(): Deferred<T> {
  let resolveFn!: (value: T) => void;
  const d: Deferred<T> = {
    promise: new Promise<T>((r) => (resolveFn = r)),
    resolve(value: T) {
      d.settled = true;
      resolveFn(value);
    },
    settled: false,
  };
  return d;
}

/** Polls until `check` returns a value (bounded). */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The log record of a request (written after the response ends), waited for with a bound. */
export async function waitForLog(gw: Gateway, requestId: string | null | undefined): Promise<LogRecord> {
  if (!requestId) throw new Error('the response carries no request id');
  return eventually(async () => {
    await gw.logs.flush();
    return gw.logs.get(requestId);
  }, `log record ${requestId}`);
}

/** The one record of a key with that status (a client that left has no request id to find it by). */
export async function recordOfKey(gw: Gateway, keyId: number, status: number): Promise<LogRecord> {
  const item = await eventually(async () => {
    await gw.logs.flush();
    return (await gw.logs.list({ access_key_id: keyId }, { limit: 10 })).items.find((r) => r.status === status);
  }, `a ${status} record`);
  const record = await gw.logs.get(item.request_id);
  if (record === undefined) throw new Error('the listed record is not found');
  return record;
}

/** A URL on 127.0.0.1 whose port was just free: connections to it are refused. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

/**
 * Reads a fetch response body as text chunk by chunk, calling `onText` with everything read
 * so far after each chunk. Resolves with the whole text when the body ends.
 */
export async function readIncrementally(res: Response, onText: (soFar: string) => void = () => {}): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    onText(text);
  }
  return text + decoder.decode();
}

/** SSE events of a text (split on blank lines, CRLF or LF). */
export function sseBlocks(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
}

/** The JSON an SSE event's `data:` lines carry (joined as the SSE rules join them). */
export function sseData(block: string): any {
  return JSON.parse(
    block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n'),
  );
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** node:http request, for headers fetch refuses to send (connection, te, keep-alive, ...). */
export function rawRequest(url: string, o: { method: string; headers: Record<string, string>; body?: string | Buffer }): Promise<RawResponse> {
  return new Promise((resolvePromise, reject) => {
    const req = httpRequest(url, { method: o.method, headers: o.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** Where the upstream expects its credential, by the client protocol's convention. */
export function upstreamCredentialHeader(protocol: string): 'authorization' | 'x-api-key' | 'x-goog-api-key' {
  if (protocol === 'x-messages') return 'x-api-key';
  if (protocol === 'x-generate' || protocol === 'x-embeddings' || protocol === 'x-live') return 'x-goog-api-key';
  return 'authorization';
}

export function expectedCredentialValue(protocol: string, secret: string): string {
  return upstreamCredentialHeader(protocol) === 'authorization' ? `Bearer ${secret}` : secret;
}

/** How a client of the protocol presents its AccessKey (the way its SDK does). */
export function clientAuthHeaders(protocol: string, keyValue: string): Record<string, string> {
  if (protocol === 'x-messages') return { 'x-api-key': keyValue, 'anthropic-version': '2023-06-01' };
  if (protocol === 'x-generate' || protocol === 'x-embeddings') return { 'x-goog-api-key': keyValue };
  return { authorization: `Bearer ${keyValue}` };
}

/** Path and query of an upstream request URL. */
export function splitUrl(url: string): { path: string; query: URLSearchParams } {
  const u = new URL(url, 'http://upstream.invalid');
  return { path: u.pathname, query: u.searchParams };
}

/** A JSON body in the client protocol that asks for a completion of `model`, streaming or not. */
export function chatBody(model: string, stream = false, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], ...(stream ? { stream: true } : {}), ...extra });
}

export function completionJson(model: string, usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }): string {
  return JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage });
}
