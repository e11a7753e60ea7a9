/** Where the model value sits in the body, as absolute byte offsets [start, end). */
export interface ModelSpan {
  readonly value: string;
  readonly start: number;
  readonly end: number;
}

/**
 * The answer a scanner settles on: the model's span, or none; `at` is where the bytes it read
 * for routing end (a form's: the start of the part that settled it, or its closing boundary).
 */
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
