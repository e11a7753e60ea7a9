import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer, type RunningServer, type ServerOptions } from '../../../src/server/create-server.ts';
import { call, type CallOptions, type CallResult } from './http-client.ts';

export const AUTH_KEY = 'test-admin-key-0123456789';

/** A clock the test moves by hand. */
export class ManualClock {
  now = Date.parse('2026-03-02T10:00:00.000Z');
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

export interface Gateway {
  server: RunningServer;
  url: string;
  dataDir: string;
  clock: ManualClock;
  /** As the AUTH_KEY unless `token` says otherwise. */
  api(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  /** POST with a fresh Idempotency-Key. */
  create(path: string, body?: unknown, options?: CallOptions): Promise<CallResult>;
  restart(overrides?: Partial<ServerOptions>): Promise<void>;
  stop(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export function tempDataDir(t: Teardown): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-mgmt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A real server on 127.0.0.1 port 0 over a temporary data directory, closed at teardown. */
export async function startGateway(t: Teardown, overrides: Partial<ServerOptions> = {}): Promise<Gateway> {
  const dataDir = overrides.dataDir ?? tempDataDir(t);
  const clock = new ManualClock();
  const options = (): ServerOptions => ({ dataDir, host: '127.0.0.1', port: 0, authKey: AUTH_KEY, clock: clock.read, log: () => undefined, ...overrides });
  let server = await createServer(options());
  let running = true;
  const gw: Gateway = {
    get server() {
      return server;
    },
    get url() {
      return server.url;
    },
    dataDir,
    clock,
    api: (method, p, o = {}) => call(server.url, method, p, { token: AUTH_KEY, ...o }),
    create: (p, body = {}, o = {}) => call(server.url, 'POST', p, { token: AUTH_KEY, body, ...o, headers: { 'Idempotency-Key': randomUUID(), ...o.headers } }),
    async restart(more = {}) {
      await server.close();
      server = await createServer({ ...options(), ...more });
      running = true;
    },
    async stop() {
      running = false;
      await server.close();
    },
  };
  t.teardown(async () => {
    if (running) await server.close();
  });
  return gw;
}

/** A Group on ch02 mapping `models`, with one imported key; returns the Group id. */
export async function seedGroup(gw: Gateway, models: string[] = ['chat-model'], body: Record<string, unknown> = {}): Promise<number> {
  const res = await gw.create('/api/groups', { name: 'primary', channel: 'ch02', base_url: 'https://upstream.test', models: models.map((external) => ({ external })), ...body });
  if (res.status !== 201) throw new Error(`seedGroup: ${res.status} ${res.text}`);
  return res.json.data.id as number;
}

export async function seedAccessKey(gw: Gateway, body: Record<string, unknown> = {}): Promise<{ id: number; value: string }> {
  const res = await gw.create('/api/access-keys', { name: 'client', protocols: ['x-completions'], ...body });
  if (res.status !== 201) throw new Error(`seedAccessKey: ${res.status} ${res.text}`);
  return { id: res.json.data.id, value: res.json.data.value };
}
