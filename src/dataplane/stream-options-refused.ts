import type { CredentialView, GroupRecord } from '../store/records.ts';

/**
 * Whether an upstream's error answer refuses the `stream_options` the gateway added to a
 * completions stream on the client's behalf: a 400 or 422 whose body names the member (Groq
 * answered 400 "property 'stream_options' is unsupported", Azure "Unrecognized request argument
 * supplied: stream_options", pydantic-validated servers 422 `extra_forbidden` with `loc`
 * `["body", "stream_options"]`; Cohere's compatibility API refuses it too). The client never
 * sent it, so the attempt goes again with the client's own body instead of failing every
 * streamed chat on such an upstream.
 */
export function refusesStreamOptions(status: number, body: Buffer): boolean {
  return (status === 400 || status === 422) && body.includes('stream_options');
}

/** How many refusing credentials are remembered; past it all are forgotten (each then pays one refused attempt again). */
const REMEMBERED_REFUSALS = 1024;

/**
 * The credentials (each at its Group's and its own configuration, so that a new base URL or
 * location is asked afresh) whose upstream refused the stream_options the gateway added: later
 * requests send them the client's body at once, instead of paying a refused attempt each.
 */
export class StreamOptionsRefusals {
  readonly #refused = new Set<string>();

  has(group: GroupRecord, credential: CredentialView): boolean {
    // Nearly always empty: no key is built for the common request.
    return this.#refused.size > 0 && this.#refused.has(refusalKey(group, credential));
  }

  add(group: GroupRecord, credential: CredentialView): void {
    if (this.#refused.size >= REMEMBERED_REFUSALS) this.#refused.clear();
    this.#refused.add(refusalKey(group, credential));
  }
}

function refusalKey(group: GroupRecord, credential: CredentialView): string {
  return `${group.id} ${group.updated_at} ${credential.id} ${credential.revision}`;
}
