import type { RouteFeatures } from '../engine/index.ts';

/**
 * What the matrix notes' rules need to know about a request, read from its JSON body (or the
 * small text fields of a multipart body).
 */
export function requestFeatures(operationStream: string, body: Record<string, unknown> | undefined, query: URLSearchParams): RouteFeatures {
  const f: RouteFeatures = {};
  if (operationStream === 'always') f.stream = true;
  else if (operationStream === 'query_flag') f.stream = query.get('stream') === 'true';
  // Operations that never stream still see a client's stream flag, so a rule can refuse it (note 5).
  else f.stream = body?.['stream'] === true || body?.['stream'] === 'true';
  if (!body) return f;
  const n = imageCount(body['n']);
  if (n !== undefined) f.image_count = n;
  const format = body['response_format'];
  if (format === 'url') f.output_format = 'url';
  else if (format === 'b64_json') f.output_format = 'base64';
  if (continuesStoredState(body)) f.previous_response = true;
  if (body['background'] === true) f.background = true;
  const kind = strongerKind(strongerKind(inputKindOf(body['input']), inputKindOf(body['query'])), inputKindOf(body['documents']));
  if (kind !== undefined) f.input_kind = kind;
  return f;
}

/**
 * `n` as a count: a number, or a form's text field of digits (`"2"`). Anything else is none:
 * `null`, `true` or `""` would read as 0 or 1, and Number() of an array stringifies it (one
 * nested a few thousand deep overflows the stack doing so).
 */
function imageCount(n: unknown): number | undefined {
  if (typeof n === 'number') return Number.isFinite(n) ? n : undefined;
  return typeof n === 'string' && DIGITS.test(n) ? Number(n) : undefined;
}

const DIGITS = /^\d+$/;

/**
 * The request continues state the upstream stored: a previous response (`previous_response_id`)
 * or a conversation (`conversation`, its id or `{ id }`). Both are what note 11's stateless
 * creation refuses.
 */
function continuesStoredState(body: Record<string, unknown>): boolean {
  const previous = body['previous_response_id'];
  if (typeof previous === 'string' && previous !== '') return true;
  return conversationIdOf(body) !== undefined;
}

/** The id of the conversation a responses request names (`conversation`, its id or `{ id }`), if it names one. */
export function conversationIdOf(body: Record<string, unknown>): string | undefined {
  const conversation = body['conversation'];
  const id = conversation !== null && typeof conversation === 'object' ? (conversation as { id?: unknown }).id : conversation;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

type InputKind = 'text' | 'token_ids' | 'other';

/** Of the members present, 'other' wins over 'token_ids', which wins over 'text'. */
function strongerKind(a: InputKind | undefined, b: InputKind | undefined): InputKind | undefined {
  if (a === undefined) return b;
  if (b === undefined || a === 'other' || b === 'text') return a;
  return b;
}

function inputKindOf(value: unknown): InputKind | undefined {
  return value === undefined ? undefined : inputKind(value);
}

// Rerank documents may be strings or objects carrying text; anything else (images) is not text.
function inputKind(input: unknown): 'text' | 'token_ids' | 'other' {
  if (typeof input === 'string') return 'text';
  if (!Array.isArray(input)) return 'other';
  if (input.length > 0 && input.every((x) => typeof x === 'number' || (Array.isArray(x) && x.every((y) => typeof y === 'number')))) return 'token_ids';
  return input.every((x) => typeof x === 'string' || isTextDocument(x)) ? 'text' : 'other';
}

/**
 * A document object that is text: a string `text`, and beside it only strings (a title, an
 * id) under keys that name no media (`image`, `image_url`, `url`, ...), which would be its content.
 */
function isTextDocument(x: unknown): boolean {
  if (x === null || typeof x !== 'object' || Array.isArray(x)) return false;
  const entries = Object.entries(x);
  return typeof (x as { text?: unknown }).text === 'string' && entries.every(([key, value]) => typeof value === 'string' && !namesMedia(key));
}

// A key's words (snake_case, camelCase or kebab-case) naming media or where it is.
function namesMedia(key: string): boolean {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((word) => MEDIA_WORDS.has(word));
}

const MEDIA_WORDS: ReadonlySet<string> = new Set(['image', 'images', 'img', 'picture', 'photo', 'video', 'audio', 'file', 'url', 'uri', 'base64', 'b64', 'data', 'bytes', 'blob', 'mime']);
