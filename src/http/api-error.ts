import { ERROR_CODES, type ErrorCode } from './error-codes.ts';

export interface ApiErrorOptions {
  data?: unknown;
  headers?: Record<string, string>;
  cause?: unknown;
}

/** A failure that maps to one row of the error table; the error middleware renders it. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly data: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, options: ApiErrorOptions = {}) {
    super(code, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.data = options.data;
    this.headers = options.headers ?? {};
  }
}

export function validationFailed(field: string, reason: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError('VALIDATION_FAILED', { data: { field, reason, ...extra } });
}

/** A credential equal to one the Group already has (`duplicate_of`). */
export function duplicateCredential(duplicateOf: number | undefined): ApiError {
  return new ApiError('CONFLICT', { data: { reason: 'duplicate_credential', duplicate_of: duplicateOf } });
}

export function notFound(resource: string, id: string | number): ApiError {
  return new ApiError('NOT_FOUND', { data: { resource, id } });
}
