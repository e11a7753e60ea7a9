import { isObject } from './error-body-member.ts';
import type { NotTheKey } from './error-codes-not-the-key.ts';

/**
 * A fragment of a 401/403's message (or a 400's, and a 5xx's for billing only: judge-upstream-answer.ts), as
 * the upstream writes it, with what it says (the classes of error-codes-not-the-key.ts). For
 * refusals that carry no code saying so: the message is then all there is. Fragments are whole
 * phrases, matched without regard to case, because a vendor's invalid-key message must never
 * contain one: "access denied" (Azure's invalid key), "permission" (Anthropic's key refusal),
 * "forbidden" or "quota" alone would. A reworded message stops matching, and the key is judged
 * by its status again.
 */
interface MessageRow {
  raw: string;
  unified: NotTheKey;
}

const messageFragments: readonly MessageRow[] = [
  // OpenAI, 403 code null: "Your organization must be verified to use the model `gpt-image-1`."
  { raw: 'must be verified to ', unified: 'request' },
  // xAI, 403 with `error` a string: "Content violates usage guidelines. … Failed check: SAFETY_CHECK_TYPE_BIO".
  { raw: 'content violates usage guidelines', unified: 'request' },
  { raw: 'safety_check_type_', unified: 'request' },
  // OpenAI, 401 code null to a restricted key calling outside its scopes: "You have insufficient
  // permissions for this operation. Missing scopes: api.responses.write. …" (continuedev/continue#10059,
  // bytedance/trae-agent#162): the key serves the operations it has scopes for, another key may have this one.
  { raw: 'missing scopes:', unified: 'request' },
  // Kimi Code (api.kimi.com/coding), 403 {"error":{"message":"Kimi For Coding is currently only available for Coding Agents such as Kimi CLI,
  // Claude Code, Roo Code, Kilo Code, etc.","type":"access_terminated_error"}} to a client its allowlist lacks, judged by the client's own
  // User-Agent and X-Msh-Platform, which the gateway passes on (MoonshotAI/kimi-code#636): the key serves the agents it allows.
  { raw: 'only available for coding agents', unified: 'request' },
  // Fireworks, 403 code FORBIDDEN: "Fire Pass API keys are not authorized for this route."
  { raw: 'not authorized for this route', unified: 'request' },
  // Azure OpenAI, 403 code "403": the resource's network rules, or private endpoints only.
  { raw: 'virtual network/firewall rules', unified: 'location' },
  { raw: 'public access is disabled', unified: 'location' },
  // Relays and vendors refusing the caller's country.
  { raw: 'not available in your region', unified: 'location' },
  { raw: 'not available in your country', unified: 'location' },
  // Gemini API, 400 FAILED_PRECONDITION (judge-upstream-answer.ts): "User location is not supported for the API use." (poenl/gemini-api#4,
  // google-gemini/gemini-cli#24641), also "… without a billing account linked." (u14app/neo-chat#7); its free tier, "Gemini API free tier is not
  // available in your country", holds the phrase above.
  { raw: 'user location is not supported', unified: 'location' },
  // xAI, 403: "Your newly created team doesn't have any credits yet."
  { raw: "doesn't have any credits", unified: 'billing' },
  { raw: 'does not have enough credits', unified: 'billing' },
  // Moonshot, 403: "… exceeded current quota, please check your plan and billing details".
  { raw: 'exceeded current quota', unified: 'billing' },
  // Kimi Code, 403 "You've reached your usage limit for this billing cycle. Your quota will be refreshed in the next cycle. …", as
  // access_terminated_error (completions; "… your monthly usage limit …", can1357/oh-my-pi#11827) or permission_error (messages,
  // NanmiCoder/cc-haha#1208): the plan's quota, refreshed by its next window or bought extra.
  { raw: 'usage limit for this billing cycle', unified: 'billing' },
  // OpenRouter, 403 code 403: "Key limit exceeded (total limit)", the key's spending cap, lifted by raising it.
  { raw: 'key limit exceeded', unified: 'billing' },
  // Anthropic, 400 invalid_request_error: "Your credit balance is too low to access the Anthropic API. …".
  { raw: 'credit balance is too low', unified: 'billing' },
  // SiliconFlow, 403 {"code":30011,"message":"The selected model requires paid balance. Your paid balance is insufficient. Please top up
  // and try again.","data":null} (FoundationAgents/OpenManus#438): a top-up lifts it, another key with paid balance serves meanwhile.
  { raw: 'paid balance is insufficient', unified: 'billing' },
  // SiliconFlow, 403 (402 at times) {"code":30001,"message":"Sorry, your account balance is insufficient","data":null}, its account out of
  // balance for any model (docs.siliconflow.com/en/faqs/error-code: 403 "insufficient permissions … refer to the error message").
  { raw: 'your account balance is insufficient', unified: 'billing' },
  // MiniMax, 500 (not 402) {"type":"error","error":{"type":"api_error","message":"insufficient balance (1008)"}} from its Anthropic-compatible
  // endpoint (MiniMax-AI/MiniMax-M2#62, NousResearch/hermes-agent#16680).
  { raw: 'insufficient balance', unified: 'billing' },
  // A LiteLLM proxy, 400 "Budget has been exceeded! Current cost: …, Max budget: …" (its `code` the status's digits): the
  // virtual key's budget, renewed by its reset period or a raise (openclaw/openclaw#74120).
  { raw: 'budget has been exceeded', unified: 'billing' },
];

/**
 * The refusal's message: `error.message` (OpenAI's and Anthropic's shapes), `error` itself when a
 * string (xAI), or with no `error` a top-level `message` (SiliconFlow's `{code,message,data}`).
 */
export function refusalMessageOf(parsed: Record<string, unknown> | undefined): string | undefined {
  const error = parsed?.['error'];
  if (isObject(error)) return typeof error['message'] === 'string' ? error['message'] : undefined;
  if (typeof error === 'string') return error;
  return error === undefined && typeof parsed?.['message'] === 'string' ? parsed['message'] : undefined;
}

/** What a message says, when a fragment of messageFragments is in it. */
export function refusalMessageClass(message: string | undefined): NotTheKey | undefined {
  if (message === undefined) return undefined;
  const lower = message.toLowerCase();
  return messageFragments.find((row) => lower.includes(row.raw))?.unified;
}
