import type { HeaderMap } from '../upstream/index.ts';
import { firstHeaderValue } from '../upstream/index.ts';
import { errorBodyOf, errorMemberIn, errorMemberOf, isObject } from './error-body-member.ts';
import { refusalMessageClass, refusalMessageOf } from './refusal-messages-not-the-key.ts';

/**
 * Why a 401/403 is not the key's fault: `request`, the refusal is about what the request asked
 * for (a model the project may not use, input a moderation flagged); `location`, about where the
 * call came from (the gateway's egress address, which another key's own proxy may change);
 * `billing`, about the account's credit or spending cap (lifted by a top-up, a raised cap or a
 * new period), judged as a 402 is.
 */
export type NotTheKey = 'request' | 'location' | 'billing';

/**
 * One error code of a 401/403 body, as the upstream sends it, with what it says. The code is
 * `error.code` in OpenAI's shape (`{error:{code,type,message}}`: completions, responses,
 * embeddings and the OpenAI-compatible vendors), `error.type` in Anthropic's
 * (`{type:"error",error:{type,message}}`: messages style).
 */
interface ErrorCodeRow {
  style: 'completions' | 'messages';
  raw: string;
  unified: NotTheKey;
  /** Sent as a 404 too, about the key's account rather than a missing resource: another key may be let in. */
  notFound?: true;
}

/**
 * Codes whose 401/403 is no verdict on the key: the next key or Group is tried, and the last such
 * answer goes to the client as sent. A `billing` code is also read on a 400 (and a 5xx), which
 * some vendors answer an account out of credit with, and a `notFound` one on a 404
 * (judge-upstream-answer.ts).
 */
const errorCodes: readonly ErrorCodeRow[] = [
  // OpenAI, 403 "Project `proj_…` does not have access to model `gpt-4.1`" (a model that does not exist is a 404, never failed over).
  { style: 'completions', raw: 'model_not_found', unified: 'request' },
  // Groq, 403 "The model `…` is blocked at the organization level" (or the project's).
  { style: 'completions', raw: 'model_permission_blocked_org', unified: 'request' },
  { style: 'completions', raw: 'model_permission_blocked_project', unified: 'request' },
  // DashScope's compatible mode, 403 "Access to model denied" (the model not activated for the account).
  { style: 'completions', raw: 'AccessDenied.Unpurchased', unified: 'request' },
  // DashScope's compatible mode, 403 (or 400) {"error":{"message":"The free tier of the model has been exhausted. If you wish to continue access the model
  // on a paid basis, please disable the \"use free tier only\" mode in the management console.","type":"AllocationQuota.FreeTierOnly",
  // "code":"AllocationQuota.FreeTierOnly"}} (APIParkLab/APIPark#394; alibabacloud.com/help/en/model-studio/new-free-quota, "Free Quota Only"):
  // the account's free quota spent, lifted by paying or a new quota; a key of another account serves meanwhile.
  { style: 'completions', raw: 'AllocationQuota.FreeTierOnly', unified: 'billing' },
  // Volcengine Ark, 403: no access to the resource asked for; the model service not activated; the account overdue (its invalid key is a 401 AuthenticationError).
  { style: 'completions', raw: 'AccessDenied', unified: 'request' },
  { style: 'completions', raw: 'OperationDenied.ServiceNotOpen', unified: 'request' },
  // Volcengine Ark, 404 {"error":{"code":"ModelNotOpen","message":"Your account 2106993666 has not activated the model doubao-pro-32k-functioncall-241028.
  // Please activate the model service in the Ark Console."}} (xinnan-tech/xiaozhi-esp32-server#1234): another account's key may have it.
  { style: 'completions', raw: 'ModelNotOpen', unified: 'request', notFound: true },
  { style: 'completions', raw: 'AccountOverdueError', unified: 'billing' },
  { style: 'completions', raw: 'OperationDenied.ServiceOverdue', unified: 'billing' },
  // DashScope's compatible mode, 400 (not 401/403) to every request of an account in arrears: {"error":{"code":"Arrearage","param":null,
  // "message":"Access denied, please make sure your account is in good standing.","type":"Arrearage"}} (hsliuping/TradingAgents-CN#170, QwenLM/Qwen#1414).
  { style: 'completions', raw: 'Arrearage', unified: 'billing' },
  // OpenAI, 400 {"error":{"code":"billing_hard_limit_reached","message":"Billing hard limit has been reached","type":"invalid_request_error"}}
  // (image generation; bajrangCoder/acode-plugin-chatgpt#19, all-in-aigc/aiwallpaper#2): the organization's spending cap.
  { style: 'completions', raw: 'billing_hard_limit_reached', unified: 'billing' },
  // Relays built on one-api / new-api (and AIHubMix), 403 {"error":{"message":"user quota is not enough","type":"new_api_error","code":"insufficient_user_quota"}}:
  // the relay account's balance, lifted by a top-up (popjane/free_chatgpt_api#76, docs.aihubmix.com/en/FAQs/HTTP-Codes).
  { style: 'completions', raw: 'insufficient_user_quota', unified: 'billing' },
  // OpenRouter's moderation, 403 "your input was flagged": no code but the status as a number; its `metadata.flagged_input` is read as the code.
  { style: 'completions', raw: 'flagged_input', unified: 'request' },
  // OpenAI, 403 "Country, region, or territory not supported".
  { style: 'completions', raw: 'unsupported_country_region_territory', unified: 'location' },
  // Anthropic, 403 {"error":{"type":"forbidden","message":"Request not allowed"}} from an unsupported country (its key refusals are authentication_error / permission_error).
  { style: 'messages', raw: 'forbidden', unified: 'location' },
];

/** What a 401/403 body says of the key. */
export interface Refusal {
  /** The body's error code (Anthropic's shape: its `error.type`) when token-like: a disable's reason names it. */
  code: string | undefined;
  /** Why the refusal is not the key's fault, when the answer says so; undefined otherwise. */
  notTheKey: NotTheKey | undefined;
  /** Its code is one a 404 is sent with about the key's account (ErrorCodeRow.notFound): moved on from, no verdict. */
  accountNotFound: boolean;
}

/** A code that may name a disable's reason: a word, never free text (a message may quote the key), nor a bare number (Azure repeats the status). */
const TOKEN_LIKE = /^(?=[0-9_.-]*[A-Za-z])[A-Za-z0-9_.-]{1,64}$/;

const tokenLike = (value: unknown): string | undefined => (typeof value === 'string' && TOKEN_LIKE.test(value) ? value : undefined);

/**
 * Reads a 400/401/403/404 answer in the style's error shape (its body up to ERROR_BODY_PARSE_LIMIT): its
 * code by errorCodes, then its message by the
 * fragments of refusal-messages-not-the-key.ts. A 403 that is a web page (a CDN's or firewall's
 * challenge or block, not the vendor's API) is about the gateway's address; a 401 is not
 * (Perplexity answers an invalid key with an HTML 401).
 */
export function readRefusal(status: number, headers: HeaderMap, body: Buffer, style: ErrorCodeRow['style']): Refusal {
  if (status === 403 && isWebPage(headers, body)) return { code: undefined, notTheKey: 'location', accountNotFound: false };
  const parsed = errorBodyOf(body);
  const error = errorMemberIn(parsed);
  const code = error === undefined ? undefined : errorCode(error, style);
  const row = errorCodes.find((r) => r.style === style && r.raw === code);
  return { code, notTheKey: row?.unified ?? refusalMessageClass(refusalMessageOf(parsed)), accountNotFound: row?.notFound === true };
}

/**
 * The code of the style's error shape when it is token-like. A router that passes a provider's
 * refusal on with a numeric code (OpenRouter) gives the provider's answer in `metadata.raw`,
 * whose code is read, or a moderation's flagged input in `metadata.flagged_input`.
 */
function errorCode(error: Record<string, unknown>, style: ErrorCodeRow['style']): string | undefined {
  if (style === 'messages') return tokenLike(error['type']);
  if (typeof error['code'] === 'string') return tokenLike(error['code']);
  const metadata = error['metadata'];
  if (!isObject(metadata)) return undefined;
  if (typeof metadata['raw'] === 'string') return tokenLike(errorMemberOf(Buffer.from(metadata['raw']))?.['code']);
  return 'flagged_input' in metadata ? 'flagged_input' : undefined;
}

/** Cloudflare marks its challenges with `cf-mitigated`; any HTML body is a page, never an API's JSON. */
function isWebPage(headers: HeaderMap, body: Buffer): boolean {
  if (firstHeaderValue(headers['cf-mitigated']) === 'challenge') return true;
  if (firstHeaderValue(headers['content-type'])?.toLowerCase().includes('text/html') === true) return true;
  const first = body.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  return first === 0x3c;
}
