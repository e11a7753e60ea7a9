import { UnknownGroupError } from '../unknown-group-error.ts';
import type { ConfigData } from './config-document.ts';

/** Called inside a mutation, before it changes anything: a Group deleted meanwhile stops the write. */
export function requireGroups(d: ConfigData, ids: readonly number[]): void {
  const missing = ids.find((id) => !d.groups.some((g) => g.id === id));
  if (missing !== undefined) throw new UnknownGroupError(missing);
}
