import type { CredentialView } from '../store/records.ts';
import type { Candidate } from './plan-candidates.ts';
import { resourceKey, type ResponseAffinity } from './response-affinity.ts';

/** What a create says of the object it makes, besides where it is held. */
export interface Creation {
  /** Asked for in the background: billed by a later read unless the create's own answer reported its usage. */
  background: boolean;
  externalModel: string | null;
  accessKeyId: number;
}

/**
 * Remembers the object a create makes (a response, a voice) with the credential that answered
 * it and the AccessKey that asked. A stream names its response in its first event
 * (`response.created`) and may run for minutes after it, while the client already cancels it
 * or resumes it from another connection: it is remembered then, and written again at the
 * request's end only when that end changes it. Meanwhile no read bills it: the stream may still
 * report the usage, which the create then counts; one that ends without it leaves it to a read.
 */
export class CreatedObject {
  /** The id remembered while the answer ran: by the credential whose answer it is, which answered() is then told too. */
  #namedId: string | undefined;

  constructor(
    readonly affinity: ResponseAffinity,
    readonly kind: string,
    readonly creation: Creation,
  ) {}

  /** The answer named the object while it still runs. */
  named(id: string, candidate: Candidate, credential: CredentialView): void {
    this.#namedId = id;
    this.#remember(id, candidate, credential, false);
  }

  /** The answer ended naming the object; `counted`: it reported the usage of the generation. */
  answered(id: string, candidate: Candidate, credential: CredentialView, counted: boolean): void {
    const unbilled = this.creation.background && !counted;
    if (id === this.#namedId && !unbilled) return;
    this.#remember(id, candidate, credential, unbilled);
  }

  #remember(id: string, candidate: Candidate, credential: CredentialView, unbilled: boolean): void {
    this.affinity.remember(resourceKey(this.kind, id), candidate.group.id, credential.id, { ...this.creation, background: unbilled, upstreamModel: candidate.upstream_model });
  }
}
