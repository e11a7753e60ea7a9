import type { OperationEntry } from '../generated/index.ts';

/**
 * Statuses that say something about the credential or the upstream's health, so that the
 * credential is disabled or cooled down and another one may be tried (before anything reached
 * the client). 402 is the key's account out of credit (DeepSeek "Insufficient Balance",
 * OpenRouter): another key may have some. 501 says the upstream does not implement the path,
 * which another credential would answer the same way. On passthrough operations (namespace
 * passthrough, alpha search; note 3: "passthrough does not guarantee upstream implementation")
 * a 403 is the upstream's answer about that path, not about the key: it is passed on and the
 * credential kept.
 */
export const FAILOVER_STATUSES = (s: number, op: OperationEntry) =>
  s === 401 || s === 402 || s === 429 || (s === 403 && !op.preserve_upstream_status) || (s >= 500 && s !== 501);
/** Statuses that prove the upstream rejected the request before processing it. */
export const REJECTED_BEFORE_PROCESSING = (s: number) => s === 401 || s === 402 || s === 403 || s === 429;
