/** The words each error style names an HTTP status with: a row of the data plane's error shape table, which a stream failure carries. */
export interface FailureVocabulary {
  /** completions/responses `error.type`. */
  completions: string;
  /** messages `error.type`. */
  messages: string;
  /** generate canonical `error.status`. */
  generate: string;
}

/** Why the gateway ends a client stream early. */
export interface StreamFailure {
  /** Gateway reason code (snake_case), e.g. `upstream_idle_timeout`. */
  code: string;
  message: string;
  /**
   * The HTTP status the same failure is answered with before the stream's first byte, and its
   * words: one failure is named alike in an HTTP answer and an error event.
   */
  status: number;
  words: FailureVocabulary;
}
