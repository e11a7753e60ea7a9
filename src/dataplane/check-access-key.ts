import { accessKeyExpired } from '../auth/access-key-expiry.ts';
import type { AccessKeyRecord } from '../store/records.ts';
import { DataPlaneError } from './data-plane-error.ts';

/**
 * Refuses a key that is disabled, expired or not allowed this protocol (spec section 5 item 8);
 * `protocol` is null for calls every key may make (model lists).
 */
export function checkAccessKey(key: AccessKeyRecord, protocol: string | null, now: number): void {
  if (!key.enabled) throw new DataPlaneError('access_key_disabled');
  if (accessKeyExpired(key, now)) throw new DataPlaneError('access_key_expired');
  if (protocol !== null && !key.protocols.includes(protocol)) throw new DataPlaneError('protocol_not_allowed', `Protocol "${protocol}" is not in this key's list.`);
}
