import { UnknownGroupError } from '../store/config-store.ts';

/**
 * A write whose Group was deleted after the route checked it (the store refuses it, writing
 * nothing) answers what the route's own check answers for a missing Group: `answer` makes it.
 */
export async function whenGroupGone<T>(write: Promise<T>, answer: (groupId: number) => Error): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (err instanceof UnknownGroupError) throw answer(err.groupId);
    throw err;
  }
}
