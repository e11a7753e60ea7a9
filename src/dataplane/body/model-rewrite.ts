import type { Readable } from 'node:stream';

export interface RewrittenBody {
  readonly body: Readable;
  /**
   * Bytes added (negative: removed) by the rewrite. When the original length is known the
   * caller sends `content-length: original + lengthDelta`; otherwise the body goes chunked.
   */
  readonly lengthDelta: number;
}

export interface ModelRewrite {
  /** The client's model name, or undefined when the body has none. */
  readonly model: string | undefined;
  /**
   * The body with the model replaced by `upstream`, the rest streamed unchanged. Without a
   * model the original bytes come back and `upstream` is unused. Callable once: the source
   * is consumed. A caller that never calls it owns the paused source (drain or destroy it).
   */
  replaceModel(upstream: string): RewrittenBody;
  /**
   * Removes the temporary file a long prefix was spooled to, if it is still there (the body
   * from replaceModel() removes it once read). Call it when the request is over; idempotent.
   */
  release(): void;
}

/** Where the model value sits in the body, as absolute byte offsets [start, end). */
export interface ModelSpan {
  readonly value: string;
  readonly start: number;
  readonly end: number;
}

/** The answer a scanner settles on: the model's span, or none; `at` is where it became known. */
export interface ScanOutcome {
  readonly model: ModelSpan | undefined;
  readonly at: number;
}

/**
 * Incremental format scanner. It keeps scanning after it settles so that the streamed tail is
 * checked too (a second model member must not reach the upstream, which would honour the last).
 */
export interface BodyScanner {
  readonly outcome: ScanOutcome | undefined;
  /** Throws BodyRewriteError on malformed input. */
  push(chunk: Buffer): void;
  /** The source ended: the outcome, or BodyRewriteError when the body is incomplete. */
  end(): ScanOutcome;
}
