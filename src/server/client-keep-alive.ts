import type { Server } from 'node:http';
import type { Settings } from '../store/records.ts';

/**
 * Holds the server's idle keep-alive to `client_keep_alive_timeout_seconds`, live: node reads
 * `keepAliveTimeout` as each request comes (its `Keep-Alive: timeout=` header) and as each answer
 * finishes (the idle deadline), so a change holds from the next answer on. Node's headers
 * deadline only runs while a request's head is coming, so it puts no bound on this one.
 */
export class ClientKeepAlive {
  #seconds: number;
  #server: Server | undefined;

  constructor(settings: Pick<Settings, 'client_keep_alive_timeout_seconds'>) {
    this.#seconds = settings.client_keep_alive_timeout_seconds;
  }

  serve(server: Server): void {
    this.#server = server;
    server.keepAliveTimeout = this.#seconds * 1000;
  }

  apply(settings: Pick<Settings, 'client_keep_alive_timeout_seconds'>): void {
    this.#seconds = settings.client_keep_alive_timeout_seconds;
    if (this.#server !== undefined) this.#server.keepAliveTimeout = this.#seconds * 1000;
  }
}
