import type { Principal } from '../auth/principal.ts';
import type { LogRecord } from '../store/log-store.ts';

/** The AccessKey whose data a request is limited to; undefined for the AUTH_KEY (everything). */
export function scopedKeyId(principal: Principal): number | undefined {
  return principal.kind === 'access_key' ? principal.accessKey.id : undefined;
}

/**
 * Spec section 2 rules 1-2: a log (with its recorded request_body, original and unredacted)
 * is readable by the AUTH_KEY and by the AccessKey that sent the request; to any other
 * AccessKey the log does not exist.
 */
export function logVisibleTo(record: LogRecord, principal: Principal): boolean {
  return principal.kind === 'auth_key' || record.access_key_id === principal.accessKey.id;
}
