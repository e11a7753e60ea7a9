/**
 * A configuration write the storage refused (a full, read-only or failing disk): part of the
 * ConfigStore contract, whatever the backend. The management plane answers it 503
 * CONFIG_STORE_UNAVAILABLE rather than 500, since the gateway itself is fine; the data plane
 * does not fail a request over a lost credential verdict.
 */
export class ConfigStoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`The configuration could not be written: ${(cause as Error).message}`, { cause });
    this.name = 'ConfigStoreUnavailableError';
  }
}
