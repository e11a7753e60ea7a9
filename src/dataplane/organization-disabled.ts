import { errorBodyOf } from './error-body-member.ts';
import { refusalMessageOf } from './refusal-messages-not-the-key.ts';

/**
 * Anthropic answers every request of a key whose organization it disabled with 400
 * invalid_request_error, "This organization has been disabled.": the key's refusal, as a 401 is,
 * whatever the request asks. The whole phrase, so that no request error holds it.
 */
const ORGANIZATION_DISABLED = 'this organization has been disabled';

/** Whether a messages-style error body (up to its parse limit) says the key's organization is disabled. */
export function saysOrganizationDisabled(body: Buffer): boolean {
  return refusalMessageOf(errorBodyOf(body))?.toLowerCase().includes(ORGANIZATION_DISABLED) === true;
}
