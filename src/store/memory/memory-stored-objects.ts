import { STORED_OBJECTS_KEPT, type StoredObject, type StoredObjectChange, type StoredObjectStore } from '../stored-object-store.ts';

/** The stored objects of a MemoryLogStore: they last as long as it does (a server given the same store keeps them). */
export class MemoryStoredObjects implements StoredObjectStore {
  readonly #objects = new Map<string, StoredObject>();

  recordStoredObject(change: StoredObjectChange): void {
    if (change.type === 'billed') {
      const object = this.#objects.get(change.key);
      if (object !== undefined) object.unbilled = false;
      return;
    }
    this.#objects.delete(change.object.key);
    this.#objects.set(change.object.key, { ...change.object });
    if (this.#objects.size > STORED_OBJECTS_KEPT) this.#objects.delete(this.#objects.keys().next().value!);
  }

  async loadStoredObjects(limit: number): Promise<StoredObject[]> {
    return [...this.#objects.values()].slice(-limit).map((o) => ({ ...o }));
  }
}
