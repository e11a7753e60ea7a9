import { duplicateCredential } from '../http/api-error.ts';
import { DuplicateCredentialError } from '../store/config-store.ts';

/** A credential update refused as equal to another of its Group answers like connect does: 409 naming that one. */
export async function duplicateCredentialAsConflict<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (err instanceof DuplicateCredentialError) throw duplicateCredential(err.duplicateOf);
    throw err;
  }
}
