import type { DataPlaneError } from '../data-plane-error.ts';
import type { BodyRewriteError } from './body-rewrite-error.ts';

/**
 * A JSON or small passthrough body refused before the gateway let it go, with its first bytes,
 * so that a key recording bodies still gets what was sent: one cut short (over `maxBodyBytes`,
 * silent, its client gone: a DataPlaneError), as a form cut short is, or a spooled one found
 * malformed (a BodyRewriteError). Only made when the reader was asked to keep those bytes.
 */
export class RefusedBodyPrefix extends Error {
  readonly refusal: DataPlaneError | BodyRewriteError;
  /** What arrived, up to the bytes the reader kept. */
  readonly head: Buffer;
  /** Bytes that arrived. */
  readonly arrived: number;

  constructor(refusal: DataPlaneError | BodyRewriteError, head: Buffer, arrived: number) {
    super(refusal.message);
    this.name = 'RefusedBodyPrefix';
    this.refusal = refusal;
    this.head = head;
    this.arrived = arrived;
  }
}
