import { ERROR_CODES, SUCCESS_MESSAGE, type ErrorCode, type Locale } from './error-codes.ts';

export interface SuccessEnvelope {
  code: 0;
  message: string;
  data?: unknown;
}

export interface FailureEnvelope {
  code: ErrorCode;
  message: string;
  data?: unknown;
}

/** `data` is omitted, not null, when there is none; any JSON value (also non-objects) is kept. */
export function successEnvelope(locale: Locale, data?: unknown): SuccessEnvelope {
  return data === undefined ? { code: 0, message: SUCCESS_MESSAGE[locale] } : { code: 0, message: SUCCESS_MESSAGE[locale], data };
}

export function failureEnvelope(locale: Locale, code: ErrorCode, data?: unknown): FailureEnvelope {
  const message = ERROR_CODES[code].message[locale];
  return data === undefined ? { code, message } : { code, message, data };
}
