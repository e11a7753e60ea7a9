import { errorMemberOf, isObject } from './error-body-member.ts';

/**
 * One error code of a 401/403 body, as the upstream sends it, with what it says: `request`, the
 * refusal is about what the request asked for (a model the project may not use, input a
 * moderation flagged); `location`, about where the call came from (the gateway's egress
 * address, which another key's own proxy may change). Neither is the key's fault. The code is
 * `error.code` in OpenAI's shape (`{error:{code,type,message}}`: completions, responses,
 * embeddings and the OpenAI-compatible vendors), `error.type` in Anthropic's
 * (`{type:"error",error:{type,message}}`: messages style).
 */
interface ErrorCodeRow {
  style: 'completions' | 'messages';
  raw: string;
  unified: 'request' | 'location';
}

/** Codes whose 401/403 is no verdict on the key: the next key or Group is tried, and the last such answer goes to the client as sent. */
const errorCodes: readonly ErrorCodeRow[] = [
  // OpenAI, 403 "Project `proj_…` does not have access to model `gpt-4.1`" (a model that does not exist is a 404, never failed over).
  { style: 'completions', raw: 'model_not_found', unified: 'request' },
  // Groq, 403 "The model `…` is blocked at the organization level" (or the project's).
  { style: 'completions', raw: 'model_permission_blocked_org', unified: 'request' },
  { style: 'completions', raw: 'model_permission_blocked_project', unified: 'request' },
  // DashScope's compatible mode, 403 "Access to model denied" (the model not activated for the account).
  { style: 'completions', raw: 'AccessDenied.Unpurchased', unified: 'request' },
  // OpenRouter's moderation, 403 "your input was flagged": no code but the status as a number; its `metadata.flagged_input` is read as the code.
  { style: 'completions', raw: 'flagged_input', unified: 'request' },
  // OpenAI, 403 "Country, region, or territory not supported".
  { style: 'completions', raw: 'unsupported_country_region_territory', unified: 'location' },
  // Anthropic, 403 {"error":{"type":"forbidden","message":"Request not allowed"}} from an unsupported country (its key refusals are authentication_error / permission_error).
  { style: 'messages', raw: 'forbidden', unified: 'location' },
];

/** A code that may name a disable's reason: a word, never free text (a message may quote the key), nor a bare number (Azure repeats the status). */
const TOKEN_LIKE = /^(?=[0-9_.-]*[A-Za-z])[A-Za-z0-9_.-]{1,64}$/;

const tokenLike = (value: unknown): string | undefined => (typeof value === 'string' && TOKEN_LIKE.test(value) ? value : undefined);

/**
 * The code of a 401/403 body in the style's error shape (up to ERROR_BODY_PARSE_LIMIT) when it
 * is token-like; undefined for any other body or code. A router that passes a provider's
 * refusal on with a numeric code (OpenRouter) gives the provider's answer in `metadata.raw`,
 * whose code is read, or a moderation's flagged input in `metadata.flagged_input`.
 */
export function readErrorCode(body: Buffer, style: ErrorCodeRow['style']): string | undefined {
  const error = errorMemberOf(body);
  if (error === undefined) return undefined;
  if (style === 'messages') return tokenLike(error['type']);
  if (typeof error['code'] === 'string') return tokenLike(error['code']);
  const metadata = error['metadata'];
  if (!isObject(metadata)) return undefined;
  if (typeof metadata['raw'] === 'string') return tokenLike(errorMemberOf(Buffer.from(metadata['raw']))?.['code']);
  return 'flagged_input' in metadata ? 'flagged_input' : undefined;
}

/** Whether the code says the refusal is not about the key (errorCodes). */
export function notAboutTheKey(style: string, code: string | undefined): boolean {
  return code !== undefined && errorCodes.some((row) => row.style === style && row.raw === code);
}
