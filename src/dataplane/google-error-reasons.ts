import type { HeaderMap } from '../upstream/index.ts';
import { errorMemberIn, isObject, parsedErrorBody } from './error-body-member.ts';

/**
 * One `google.rpc.ErrorInfo` reason of Google's error shape (`{error:{code,message,status,
 * details:[…]}}`), as the upstream sends it, with what it says: `credential`, the key (or its
 * project) is refused whatever the request asks. `unlessClientSent`: the key's restriction is
 * on what these request headers say, which the client's own headers (forwarded) may have set;
 * then the refusal is the client's, not the key's.
 */
interface GoogleErrorReasonRow {
  raw: string;
  unified: 'credential';
  unlessClientSent?: readonly string[];
}

/**
 * Reasons of google/api/error_reason.proto that condemn the credential. An expired key is
 * `API_KEY_INVALID` too ("API key expired. Please renew the API key.", 400). Left out, so that
 * their answer goes to the client as sent: reasons that depend on the method or resource asked
 * for (CREDENTIALS_MISSING and ACCESS_TOKEN_TYPE_UNSUPPORTED, as for a tuned model an API key
 * may not call; ACCESS_TOKEN_SCOPE_INSUFFICIENT), on a project the client may name
 * (USER_PROJECT_DENIED, RESOURCE_PROJECT_INVALID), on the caller's location, or on an OAuth
 * token (ACCESS_TOKEN_EXPIRED): the gateway sends only `x-goog-api-key`, so a token is the
 * client's own.
 */
const googleErrorReasons: readonly GoogleErrorReasonRow[] = [
  { raw: 'API_KEY_INVALID', unified: 'credential' },
  { raw: 'API_KEY_SERVICE_BLOCKED', unified: 'credential' },
  { raw: 'API_KEY_IP_ADDRESS_BLOCKED', unified: 'credential' },
  { raw: 'API_KEY_HTTP_REFERRER_BLOCKED', unified: 'credential', unlessClientSent: ['referer'] },
  { raw: 'API_KEY_ANDROID_APP_BLOCKED', unified: 'credential', unlessClientSent: ['x-android-package', 'x-android-cert'] },
  { raw: 'API_KEY_IOS_APP_BLOCKED', unified: 'credential', unlessClientSent: ['x-ios-bundle-identifier'] },
  { raw: 'SERVICE_DISABLED', unified: 'credential' },
  { raw: 'BILLING_DISABLED', unified: 'credential' },
  { raw: 'CONSUMER_SUSPENDED', unified: 'credential' },
  { raw: 'CONSUMER_INVALID', unified: 'credential' },
  { raw: 'ACCOUNT_STATE_INVALID', unified: 'credential' },
];

/**
 * Fragments of the message of a refusal in Google's shape that carries no ErrorInfo, yet refuses
 * the key (or its project) whatever the request asks: without them it would read as a refusal
 * about a file or a tuned model, passed on with the dead key kept. Whole phrases, matched
 * without regard to case. Its verdict's reason names the error's `status`.
 */
const keyRefusalMessages: readonly string[] = [
  // Gemini API, 403 PERMISSION_DENIED with no details, "Your API key was reported as leaked.
  // Please use another API key." (googleapis/python-genai#1764, google-gemini-php/laravel#47).
  'your api key was reported as leaked',
  // Gemini API, 403 PERMISSION_DENIED with no details, "Your project has been denied access.
  // Please contact support." (poenl/gemini-api#8).
  'your project has been denied access',
];

/** What an error answer in Google's shape says beyond its status. */
export interface GoogleErrorDetails {
  /** The ErrorInfo reason, as sent; undefined when the body gives none. */
  reason: string | undefined;
  /** The error's `status` ("PERMISSION_DENIED"), as sent. */
  status: string;
  /** The error's `message`; undefined when not a string. */
  message: string | undefined;
  /** RetryInfo's `retryDelay`, in ms; undefined when the body gives none (or not as a duration). */
  retryDelayMs: number | undefined;
}

/**
 * The details of a body in Google's error shape (up to ERROR_BODY_PARSE_LIMIT), or undefined for
 * any other body. A JSON-array stream (streamGenerateContent without `alt=sse`) answers its error
 * as the array's one element, `[{"error":{…}}]`: read the same, or its 403 about a file would
 * disable every key in turn.
 */
export function readGoogleError(body: Buffer): GoogleErrorDetails | undefined {
  const parsed = parsedErrorBody(body);
  const top = Array.isArray(parsed) && parsed.length === 1 ? parsed[0] : parsed;
  const error = errorMemberIn(isObject(top) ? top : undefined);
  if (error === undefined || typeof error['status'] !== 'string' || typeof error['code'] !== 'number') return undefined;
  const details = Array.isArray(error['details']) ? error['details'].filter(isObject) : [];
  const info = details.find((d) => d['@type'] === ERROR_INFO);
  const retry = details.find((d) => d['@type'] === RETRY_INFO);
  return {
    reason: typeof info?.['reason'] === 'string' ? info['reason'] : undefined,
    status: error['status'],
    message: typeof error['message'] === 'string' ? error['message'] : undefined,
    retryDelayMs: typeof retry?.['retryDelay'] === 'string' ? durationMs(retry['retryDelay']) : undefined,
  };
}

/**
 * The ErrorInfo reason when it condemns the credential (as the request sent it), or the error's
 * status when, with no reason, its message does (keyRefusalMessages); else undefined.
 */
export function credentialReason(details: GoogleErrorDetails, clientHeaders: HeaderMap): string | undefined {
  const row = googleErrorReasons.find((r) => r.raw === details.reason);
  if (row !== undefined) return row.unlessClientSent?.some((name) => clientHeaders[name] !== undefined) ? undefined : row.raw;
  const message = details.reason === undefined ? details.message?.toLowerCase() : undefined;
  return message !== undefined && keyRefusalMessages.some((fragment) => message.includes(fragment)) ? details.status : undefined;
}

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';

/** A google.protobuf.Duration in its JSON form: seconds with up to nine fraction digits and `s` ("45.8s"). */
const DURATION = /^(\d+)(?:\.(\d{1,9}))?s$/;

function durationMs(value: string): number | undefined {
  const match = DURATION.exec(value.trim());
  if (match === null) return undefined;
  return Math.ceil(Number(`${match[1]}.${match[2] ?? '0'}`) * 1000);
}
