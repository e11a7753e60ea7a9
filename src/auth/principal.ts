import type { AccessKeyRecord } from '../store/records.ts';
import { accessKeyExpired } from './access-key-expiry.ts';
import { secretsEqual } from './constant-time.ts';

export type Principal = { kind: 'auth_key' } | { kind: 'access_key'; accessKey: AccessKeyRecord };

export interface AccessKeyFinder {
  /** Looks a key up by a keyed hash of the presented value, so the lookup is no timing oracle. */
  findByValue(value: string): Promise<AccessKeyRecord | undefined>;
}

/**
 * AUTH_KEY first (constant-time), then AccessKey by value. A disabled or expired AccessKey
 * does not authenticate: it is neither the AUTH_KEY nor a valid AccessKey.
 */
export async function resolvePrincipal(token: string, authKey: string, accessKeys: AccessKeyFinder, now: number): Promise<Principal | undefined> {
  if (secretsEqual(token, authKey)) return { kind: 'auth_key' };
  const accessKey = await accessKeys.findByValue(token);
  if (!accessKey || !accessKeyUsable(accessKey, now)) return undefined;
  return { kind: 'access_key', accessKey };
}

export function accessKeyUsable(key: AccessKeyRecord, now: number): boolean {
  return key.enabled && !accessKeyExpired(key, now);
}
