/** What a write the disk refused fails with: the configuration is fine, its storage is not. */
const STORAGE_FAILURES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EACCES']);

/**
 * A configuration write the disk refused (full, read-only, failing): the management plane
 * answers it 503 CONFIG_STORE_UNAVAILABLE rather than 500, since the gateway itself is fine.
 */
export class ConfigStoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`The configuration could not be written: ${(cause as Error).message}`, { cause });
    this.name = 'ConfigStoreUnavailableError';
  }
}

/** A write failure as ConfigStoreUnavailableError when the disk refused it; any other failure as it is. */
export function asConfigStoreUnavailable(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && STORAGE_FAILURES.has(code) ? new ConfigStoreUnavailableError(error) : error;
}
