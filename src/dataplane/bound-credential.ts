import type { CredentialView } from '../store/records.ts';

/** Each snapshot credentials array's credentials by id, each as an array of its own; made on a bound request's first look. */
const boundById = new WeakMap<readonly CredentialView[], ReadonlyMap<number, readonly CredentialView[]>>();
const NONE: readonly CredentialView[] = Object.freeze([]);

/**
 * The credentials of a Group's `credentials` with id `id`, as the same array object for every
 * request bound to that credential while the snapshot holds this array, so that the pool's
 * servable index (kept per array) is built once for them, not on each such request. A credential
 * gone from the Group gives one empty array.
 */
export function boundCredentials(credentials: readonly CredentialView[], id: number): readonly CredentialView[] {
  let byId = boundById.get(credentials);
  if (byId === undefined) {
    // Credential ids are unique: each is an array of one.
    byId = new Map(credentials.map((c) => [c.id, [c]]));
    boundById.set(credentials, byId);
  }
  return byId.get(id) ?? NONE;
}
