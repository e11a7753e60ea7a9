import type { PrepareStatement } from './prepared-statements.ts';

/** Tables each connection has been seen to have: only the writer creates them, and never drops them, so a yes stays true. */
const seen = new WeakMap<PrepareStatement, Set<string>>();

/**
 * Whether the connection's file has the table: a file from before it (opened read-only, or
 * written by an older version) has not. Asked again until it is there, then remembered.
 */
export function hasTable(prepare: PrepareStatement, name: string): boolean {
  const known = seen.get(prepare);
  if (known?.has(name)) return true;
  if (prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) === undefined) return false;
  if (known === undefined) seen.set(prepare, new Set([name]));
  else known.add(name);
  return true;
}
