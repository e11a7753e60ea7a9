/**
 * A write names a Group that no longer exists (deleted since the caller checked it). Thrown
 * from inside the write, so nothing was stored; the management API answers it as it answers
 * a missing Group.
 */
export class UnknownGroupError extends Error {
  readonly groupId: number;

  constructor(groupId: number) {
    super(`group ${groupId} does not exist`);
    this.name = 'UnknownGroupError';
    this.groupId = groupId;
  }
}
