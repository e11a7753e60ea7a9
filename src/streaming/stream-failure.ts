/** Why the gateway ends a client stream early. */
export type StreamFailureKind = 'timeout' | 'upstream';

export interface StreamFailure {
  kind: StreamFailureKind;
  /** Gateway reason code (snake_case), e.g. `upstream_idle_timeout`. */
  code: string;
  message: string;
}

/** Protocol-specific words for each failure kind. */
export interface FailureVocabulary {
  /** completions/responses `error.type`. */
  openaiType: string;
  /** messages `error.type` (one of the types the SDK knows). */
  messagesType: string;
  /** generate `error.code` (HTTP status) and canonical `error.status`. */
  googleCode: number;
  googleStatus: string;
}

export const failureVocabulary: Readonly<Record<StreamFailureKind, FailureVocabulary>> = {
  timeout: { openaiType: 'timeout_error', messagesType: 'timeout_error', googleCode: 504, googleStatus: 'DEADLINE_EXCEEDED' },
  upstream: { openaiType: 'server_error', messagesType: 'api_error', googleCode: 503, googleStatus: 'UNAVAILABLE' },
};
