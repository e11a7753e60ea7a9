import type { DataPlaneError } from '../data-plane-error.ts';

/**
 * A JSON or small passthrough body that did not all arrive (over `maxBodyBytes`, silent, its
 * client gone), with its first bytes, so that a key recording bodies still gets what arrived,
 * as it does for a form cut short. Only made when the reader was asked to keep them.
 */
export class CutShortBody extends Error {
  readonly refusal: DataPlaneError;
  /** What arrived, up to the bytes the reader kept. */
  readonly head: Buffer;
  /** Bytes that arrived. */
  readonly arrived: number;

  constructor(refusal: DataPlaneError, head: Buffer, arrived: number) {
    super(refusal.message);
    this.name = 'CutShortBody';
    this.refusal = refusal;
    this.head = head;
    this.arrived = arrived;
  }
}
