import type { Server } from 'node:http';
import type { Settings } from '../store/records.ts';

/**
 * Holds the servers' idle keep-alive to `client_keep_alive_timeout_seconds`, live: node reads
 * `keepAliveTimeout` as each request comes (its `Keep-Alive: timeout=` header) and as each answer
 * finishes (the idle deadline), so a change holds from the next answer on. Node's headers
 * deadline only runs while a request's head is coming, so it puts no bound on this one.
 */
export class ClientKeepAlive {
  readonly #servers: Server[] = [];
  #ms: number;

  constructor(settings: Pick<Settings, 'client_keep_alive_timeout_seconds'>) {
    this.#ms = settings.client_keep_alive_timeout_seconds * 1000;
  }

  serve(server: Server): void {
    server.keepAliveTimeout = this.#ms;
    this.#servers.push(server);
  }

  apply(settings: Pick<Settings, 'client_keep_alive_timeout_seconds'>): void {
    this.#ms = settings.client_keep_alive_timeout_seconds * 1000;
    for (const server of this.#servers) server.keepAliveTimeout = this.#ms;
  }
}
