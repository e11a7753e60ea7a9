export type BodyRewriteErrorCode = 'invalid_json' | 'not_an_object' | 'invalid_multipart' | 'too_many_members';

/** Why a request body could not be scanned; callers answer the client with a 4xx. */
export class BodyRewriteError extends Error {
  readonly code: BodyRewriteErrorCode;

  constructor(code: BodyRewriteErrorCode, message: string) {
    super(message);
    this.name = 'BodyRewriteError';
    this.code = code;
  }
}
