/**
 * Which Group and credential created a response, so that retrieval, deletion, cancellation
 * and input items reach the upstream that holds it. Bounded: the oldest entries go first.
 */
export class ResponseAffinity {
  readonly #entries = new Map<string, { groupId: number; credentialId: number }>();

  constructor(readonly capacity: number) {}

  remember(responseId: string, groupId: number, credentialId: number): void {
    this.#entries.delete(responseId);
    this.#entries.set(responseId, { groupId, credentialId });
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }

  lookup(responseId: string): { groupId: number; credentialId: number } | undefined {
    return this.#entries.get(responseId);
  }
}
