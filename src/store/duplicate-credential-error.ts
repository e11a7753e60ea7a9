/** An update would make a credential equal to another one of its Group; nothing was stored. */
export class DuplicateCredentialError extends Error {
  readonly duplicateOf: number;

  constructor(duplicateOf: number) {
    super(`equal to credential ${duplicateOf}`);
    this.name = 'DuplicateCredentialError';
    this.duplicateOf = duplicateOf;
  }
}
