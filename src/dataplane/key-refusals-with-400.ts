import { errorBodyOf } from './error-body-member.ts';
import { refusalMessageOf } from './refusal-messages-not-the-key.ts';

/**
 * A fragment of a 400's message, as the upstream writes it, that refuses the key whatever the
 * request asks, as a 401 does: a vendor that answers its key refusals 400 would otherwise keep a
 * dead key in rotation, every request through it answered 400. Whole phrases, matched without
 * regard to case, so that no request error holds one.
 */
interface KeyRefusalRow {
  style: 'completions' | 'messages';
  raw: string;
}

const keyRefusals: readonly KeyRefusalRow[] = [
  // Anthropic, 400 invalid_request_error to every request of a key whose organization it disabled: "This organization has been disabled.".
  { style: 'messages', raw: 'this organization has been disabled' },
  // xAI, 400 with `error` a string, {"code":"Client specified an invalid argument","error":"Incorrect API key provided: xa***Q6. You can
  // obtain an API key from https://console.x.ai."} for an invalid or revoked key (continuedev/continue#10778, i-am-bee/beeai-framework#447).
  { style: 'completions', raw: 'incorrect api key provided' },
  // Groq, 400 {"error":{"message":"Organization has been restricted. Please reach out to support if you believe this was in error.",
  // "type":"invalid_request_error","code":"organization_restricted"}} to every request of a restricted organization
  // (NVIDIA-NeMo/Guardrails#563, songquanpeng/one-api#1764).
  { style: 'completions', raw: 'organization has been restricted' },
];

/** Whether a 400 error body of the style (up to its parse limit) refuses the key. */
export function saysKeyRefused(body: Buffer, style: KeyRefusalRow['style']): boolean {
  const message = refusalMessageOf(errorBodyOf(body))?.toLowerCase();
  return message !== undefined && keyRefusals.some((row) => row.style === style && message.includes(row.raw));
}
