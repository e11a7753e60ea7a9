import { notFound } from '../http/api-error.ts';
import { type CredentialStore, UnknownGroupError } from '../store/config-store.ts';

/**
 * A write whose Group (named in the path) was deleted after the route checked it answers
 * what the check would have answered: not found.
 */
export async function groupGoneAsNotFound<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (err instanceof UnknownGroupError) throw notFound('group', err.groupId);
    throw err;
  }
}

/** The credential store as routes of one Group's path use it: creation in a deleted Group is not found. */
export function credentialsInGroupPath(credentials: CredentialStore): CredentialStore {
  return {
    list: (groupId) => credentials.list(groupId),
    get: (groupId, id) => credentials.get(groupId, id),
    createMany: (groupId, items) => groupGoneAsNotFound(credentials.createMany(groupId, items)),
    update: (groupId, id, patch) => credentials.update(groupId, id, patch),
    setState: (groupId, id, change) => credentials.setState(groupId, id, change),
    consumeResetCredit: (groupId, id) => credentials.consumeResetCredit(groupId, id),
    delete: (groupId, id) => credentials.delete(groupId, id),
    reveal: (groupId, id) => credentials.reveal(groupId, id),
  };
}
