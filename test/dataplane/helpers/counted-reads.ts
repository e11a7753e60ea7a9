import type { CredentialView } from '../../../src/store/records.ts';

/** The credentials array, with a count of the reads of its elements (by index or iteration). */
export function counted(credentials: readonly CredentialView[]): { array: readonly CredentialView[]; reads: () => number } {
  let reads = 0;
  const array = new Proxy(credentials, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver);
    },
  });
  return { array, reads: () => reads };
}
