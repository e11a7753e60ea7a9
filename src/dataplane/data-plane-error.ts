import { REFUSAL_REASONS, type RefusalReason } from '../engine/index.ts';
import { NO_RETRY } from './retry-hints.ts';

export type DataPlaneCode = RefusalReason;

/** A data-plane error before anything reached the client; rendered in the client's protocol. */
export class DataPlaneError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(
    readonly code: DataPlaneCode,
    detail?: string,
    headers: Record<string, string> = {},
  ) {
    const entry: { status: number; message: string; retry?: false } = REFUSAL_REASONS[code];
    super(detail ? `${entry.message} ${detail}` : entry.message);
    this.status = entry.status;
    this.headers = entry.retry === false ? { ...headers, ...NO_RETRY } : headers;
  }
}

/**
 * What a failure is answered with: its own DataPlaneError, or for anything else (a bug of
 * ours) `internal_error`, with the stack as a process warning to find it by.
 */
export function dataPlaneFailure(err: unknown): DataPlaneError {
  if (err instanceof DataPlaneError) return err;
  process.emitWarning(`data plane: ${(err as Error)?.stack ?? String(err)}`);
  return new DataPlaneError('internal_error');
}
