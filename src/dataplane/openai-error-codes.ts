import { errorMemberOf } from './error-body-member.ts';

/**
 * One `error.code` of OpenAI's error shape (`{error:{code,type,message}}`: completions,
 * responses, embeddings and the OpenAI-compatible vendors), as the upstream sends it, with what
 * it says: `request`, the refusal is about what the request asked for (a model the project has
 * no access to); `location`, about where the call came from (the gateway's egress address, which
 * another key's own proxy may change). Neither is the key's fault.
 */
interface OpenAIErrorCodeRow {
  raw: string;
  unified: 'request' | 'location';
}

/** Codes whose 401/403 is no verdict on the key: the next key or Group is tried, and the last such answer goes to the client as sent. */
const openaiErrorCodes: readonly OpenAIErrorCodeRow[] = [
  // 403 "Project `proj_…` does not have access to model `gpt-4.1`" (a model that does not exist is a 404, never failed over).
  { raw: 'model_not_found', unified: 'request' },
  // 403 "Country, region, or territory not supported".
  { raw: 'unsupported_country_region_territory', unified: 'location' },
];

/** A code that may name a disable's reason: a word, never free text (a message may quote the key), nor a bare number (Azure repeats the status). */
const TOKEN_LIKE = /^(?=[0-9_.-]*[A-Za-z])[A-Za-z0-9_.-]{1,64}$/;

/** The `error.code` of a body in OpenAI's error shape (up to ERROR_BODY_PARSE_LIMIT) when it is token-like; undefined for any other body or code. */
export function readOpenAIErrorCode(body: Buffer): string | undefined {
  const code = errorMemberOf(body)?.['code'];
  return typeof code === 'string' && TOKEN_LIKE.test(code) ? code : undefined;
}

/** Whether the code says the refusal is not about the key (openaiErrorCodes). */
export function notAboutTheKey(code: string | undefined): boolean {
  return code !== undefined && openaiErrorCodes.some((row) => row.raw === code);
}
