import { DataPlaneError } from './data-plane-error.ts';

// Each list's paging, as its vendor documents it: Anthropic `limit` 1..1000 (default 20) with
// `after_id` / `before_id`; Google `pageSize` (default 50, larger values capped at 1000) with
// an opaque `pageToken`.
const MESSAGES_LIMIT = { default: 20, max: 1000 };
const GENERATE_PAGE_SIZE = { default: 50, max: 1000 };
const TOKEN_PREFIX = 'after:';
// Anthropic's `lifecycle` filter: the SDK sends `lifecycle[]=retired` (brackets), one per stage.
const LIFECYCLE_PARAMS = ['lifecycle[]', 'lifecycle'];
const LIFECYCLE_STAGES = new Set(['active', 'deprecated', 'retired']);

/** One page of a messages-style list, and whether more remain in the direction of travel. */
export interface MessagesPage {
  names: string[];
  hasMore: boolean;
}

/**
 * The page `limit`, `after_id` or `before_id` ask for. `names` is sorted (visibleModelNames),
 * so a cursor is a position in that order: one that names no visible model (a model removed
 * between two pages) still resumes where it left off, and shows nothing the key cannot see.
 * Every configured model is `active`: a `lifecycle` filter without that stage leaves none.
 */
export function messagesPage(visible: readonly string[], query: URLSearchParams): MessagesPage {
  const limit = integerParam(query, 'limit', 1, MESSAGES_LIMIT.max) ?? MESSAGES_LIMIT.default;
  const afterId = query.get('after_id');
  const beforeId = query.get('before_id');
  if (afterId !== null && beforeId !== null) throw new DataPlaneError('invalid_query_parameter', 'Give after_id or before_id, not both.');
  const stages = lifecycleStages(query);
  const names = stages === undefined || stages.has('active') ? visible : [];
  if (beforeId !== null) {
    const end = firstIndex(names, (n) => n >= beforeId);
    const start = Math.max(0, end - limit);
    return { names: names.slice(start, end), hasMore: start > 0 };
  }
  const start = afterId === null ? 0 : firstIndex(names, (n) => n > afterId);
  return { names: names.slice(start, start + limit), hasMore: start + limit < names.length };
}

/** One page of a generate-style list, with the token of the next when more remain. */
export function generatePage(names: readonly string[], query: URLSearchParams): { names: string[]; nextPageToken?: string } {
  // Google: 0 or unset is the default, anything above the maximum is the maximum.
  const asked = integerParam(query, 'pageSize', 0) ?? 0;
  const size = asked === 0 ? GENERATE_PAGE_SIZE.default : Math.min(asked, GENERATE_PAGE_SIZE.max);
  const token = query.get('pageToken');
  const after = token ? lastNameOf(token) : undefined;
  const start = after === undefined ? 0 : firstIndex(names, (n) => n > after);
  const page = names.slice(start, start + size);
  return start + size < names.length ? { names: page, nextPageToken: tokenAfter(page[page.length - 1]!) } : { names: page };
}

/** The stages a `lifecycle` filter names, undefined without one; a stage Anthropic does not define is refused. */
function lifecycleStages(query: URLSearchParams): Set<string> | undefined {
  const stages = LIFECYCLE_PARAMS.flatMap((name) => query.getAll(name));
  if (stages.length === 0) return undefined;
  const unknown = stages.find((stage) => !LIFECYCLE_STAGES.has(stage));
  if (unknown !== undefined) throw new DataPlaneError('invalid_query_parameter', 'lifecycle takes active, deprecated or retired.');
  return new Set(stages);
}

function integerParam(query: URLSearchParams, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max)) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new DataPlaneError('invalid_query_parameter', `${name} must be an integer ${range}.`);
  }
  return n;
}

function firstIndex(names: readonly string[], test: (name: string) => boolean): number {
  const i = names.findIndex(test);
  return i < 0 ? names.length : i;
}

function tokenAfter(name: string): string {
  return Buffer.from(TOKEN_PREFIX + name).toString('base64url');
}

/** The last name of the page a token came from; a token this gateway did not issue is refused. */
function lastNameOf(token: string): string {
  const text = Buffer.from(token, 'base64url').toString();
  if (!text.startsWith(TOKEN_PREFIX) || tokenAfter(text.slice(TOKEN_PREFIX.length)) !== token) {
    throw new DataPlaneError('invalid_query_parameter', 'pageToken is not one this list returned.');
  }
  return text.slice(TOKEN_PREFIX.length);
}
