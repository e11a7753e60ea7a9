import { REFUSAL_REASONS, type RefusalReason } from '../engine/index.ts';

export type DataPlaneCode = RefusalReason;

/** A data-plane error before anything reached the client; rendered in the client's protocol. */
export class DataPlaneError extends Error {
  readonly status: number;
  constructor(
    readonly code: DataPlaneCode,
    detail?: string,
    readonly headers: Record<string, string> = {},
  ) {
    const entry = REFUSAL_REASONS[code];
    super(detail ? `${entry.en} ${detail}` : entry.en);
    this.status = entry.status;
  }
}
