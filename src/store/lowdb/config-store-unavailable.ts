import { ConfigStoreUnavailableError } from '../config-store-unavailable-error.ts';

/** What a write the disk refused fails with: the configuration is fine, its storage is not. */
const STORAGE_FAILURES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EACCES']);

/** A write failure as ConfigStoreUnavailableError when the disk refused it; any other failure as it is. */
export function asConfigStoreUnavailable(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && STORAGE_FAILURES.has(code) ? new ConfigStoreUnavailableError(error) : error;
}
