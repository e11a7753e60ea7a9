/** A member of a SlotSet: the index of its slot there, -1 while in none. */
export interface Slotted {
  slot: number;
}

/**
 * The members of a set that every stream joins and leaves (the idle sweeper's watchers, the
 * in-flight streams), in the order they joined, kept in an array with each member's index on
 * the member: a delete leaves a hole, and the array is compacted in place once holes outnumber
 * members, so no hash table is ever made. A `Set` rehashes its table every few dozen adds and
 * deletes, and V8 keeps an obsolete table's entries and a link to its successor: one that had
 * reached the old generation kept the streams it held, and the tables after it, alive through
 * every scavenge until the next mark-compact. Under load each scavenge then promoted about 2 MB
 * of finished requests (data-plane-internals.md, twenty-sixth session).
 */
export class SlotSet<T extends Slotted> {
  readonly #members: (T | undefined)[] = [];
  #size = 0;
  /** forEach calls under way: the array is compacted only once they end. */
  #visiting = 0;

  get size(): number {
    return this.#size;
  }

  add(member: T): void {
    if (member.slot >= 0) return;
    member.slot = this.#members.length;
    this.#members.push(member);
    this.#size++;
  }

  delete(member: T): void {
    const at = member.slot;
    if (at < 0 || this.#members[at] !== member) return;
    member.slot = -1;
    this.#members[at] = undefined;
    this.#size--;
    if (this.#visiting === 0) this.#compactIfSparse();
  }

  /** Visits every member in the order they joined, those added meanwhile too, as a Set's iteration does; one deleted meanwhile is not visited. */
  forEach(visit: (member: T) => void): void {
    this.#visiting++;
    try {
      for (let i = 0; i < this.#members.length; i++) {
        const member = this.#members[i];
        if (member !== undefined) visit(member);
      }
    } finally {
      if (--this.#visiting === 0) this.#compactIfSparse();
    }
  }

  #compactIfSparse(): void {
    const members = this.#members;
    // Holes at the end go at once; the rest once they outnumber the members.
    while (members.length > 0 && members[members.length - 1] === undefined) members.pop();
    if (members.length - this.#size <= Math.max(this.#size, 16)) return;
    let kept = 0;
    for (let i = 0; i < members.length; i++) {
      const member = members[i];
      if (member === undefined) continue;
      member.slot = kept;
      members[kept++] = member;
    }
    members.length = kept;
  }
}
