import { firstHeaderValue, type HeaderMap } from '../upstream/index.ts';
import { errorMemberOf, isObject } from './error-body-member.ts';

/**
 * A vendor's pair of rate-limit headers, as it sends them on every answer (lower-cased, as the
 * upstream client gives them): how much of a limit is left and when that limit resets, in the
 * vendor's own format (`unified`).
 */
interface RateLimitResetRow {
  remaining: string;
  reset: string;
  unified: 'duration' | 'epoch-ms' | 'rfc3339';
}

/**
 * Reset headers read from a 429 that gives no `retry-after`, `retry-after-ms` nor RetryInfo: the
 * key cools down until the last of its exhausted limits (remaining `0`) resets. A limit with some
 * left says nothing of the one refused (a daily limit these headers do not show, a request larger
 * than what remains): the default cooldown stays.
 */
const rateLimitResetRows: readonly RateLimitResetRow[] = [
  // OpenAI (platform.openai.com/docs/guides/rate-limits: `x-ratelimit-reset-requests: 1s`,
  // `x-ratelimit-reset-tokens: 6m0s`), Groq (console.groq.com/docs/rate-limits: `2m59.56s`,
  // `7.66s`) and the OpenAI-compatible APIs that copy them: a Go duration.
  { remaining: 'x-ratelimit-remaining-requests', reset: 'x-ratelimit-reset-requests', unified: 'duration' },
  { remaining: 'x-ratelimit-remaining-tokens', reset: 'x-ratelimit-reset-tokens', unified: 'duration' },
  // OpenRouter's own limits (free models per minute and per day: `X-RateLimit-Reset: 1741305600000`,
  // also in the 429 body's `error.metadata.headers`; Gitlawb/openclaude#936): an epoch in ms.
  { remaining: 'x-ratelimit-remaining', reset: 'x-ratelimit-reset', unified: 'epoch-ms' },
  // Anthropic (docs.anthropic.com/en/api/rate-limits, `anthropic-ratelimit-requests-reset`: RFC 3339),
  // which sends `retry-after` with its 429s: these are for one that does not, a relay's.
  { remaining: 'anthropic-ratelimit-requests-remaining', reset: 'anthropic-ratelimit-requests-reset', unified: 'rfc3339' },
  { remaining: 'anthropic-ratelimit-tokens-remaining', reset: 'anthropic-ratelimit-tokens-reset', unified: 'rfc3339' },
  { remaining: 'anthropic-ratelimit-input-tokens-remaining', reset: 'anthropic-ratelimit-input-tokens-reset', unified: 'rfc3339' },
  { remaining: 'anthropic-ratelimit-output-tokens-remaining', reset: 'anthropic-ratelimit-output-tokens-reset', unified: 'rfc3339' },
];

/** The wait until the last exhausted limit resets, in ms from `now`; undefined when no exhausted limit says when. */
export function rateLimitResetMs(headers: HeaderMap, now: number): number | undefined {
  let longest: number | undefined;
  for (const row of rateLimitResetRows) {
    if (firstHeaderValue(headers[row.remaining])?.trim() !== '0') continue;
    const value = firstHeaderValue(headers[row.reset])?.trim();
    const wait = value === undefined ? undefined : resetWaitMs(value, row.unified, now);
    if (wait !== undefined && (longest === undefined || wait > longest)) longest = wait;
  }
  return longest;
}

/**
 * The rate-limit headers a 429 body carries in `error.metadata.headers` (OpenRouter's own limits,
 * `{"X-RateLimit-Remaining":"0","X-RateLimit-Reset":"…"}`), lower-cased as the upstream client
 * gives real headers: read after those (`{ ...bodyRateLimitHeaders(body), ...headers }`).
 */
export function bodyRateLimitHeaders(body: Buffer): HeaderMap {
  const metadata = errorMemberOf(body)?.['metadata'];
  const sent = isObject(metadata) ? metadata['headers'] : undefined;
  if (!isObject(sent)) return {};
  return Object.fromEntries(Object.entries(sent).flatMap(([name, value]) => (typeof value === 'string' ? [[name.toLowerCase(), value]] : [])));
}

function resetWaitMs(value: string, unified: RateLimitResetRow['unified'], now: number): number | undefined {
  if (unified === 'duration') return goDurationMs(value);
  const at = unified === 'epoch-ms' ? (/^\d{13}$/.test(value) ? Number(value) : undefined) : RFC3339.test(value) ? Date.parse(value) : undefined;
  return at === undefined || Number.isNaN(at) ? undefined : Math.max(0, Math.ceil(at - now));
}

/** `2025-06-01T12:00:30Z`, with a fraction or an offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

/** Go's time.Duration as it prints: `6m0s`, `1h2m3.5s`, `120ms`, `500µs`. */
const GO_DURATION = /^(?:\d+(?:\.\d+)?(?:h|m|s|ms|us|µs|μs|ns))+$/;
const GO_DURATION_PART = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|μs|ns)/g;
const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, μs: 0.001, ns: 0.000001 };

function goDurationMs(value: string): number | undefined {
  if (!GO_DURATION.test(value)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(GO_DURATION_PART)) ms += Number(amount) * UNIT_MS[unit!]!;
  return Math.ceil(ms);
}
