import { CliError } from './cli-error.ts';

/**
 * The required options' values, or a usage error that names each one left out (or empty) and
 * what it takes: the usage line alone does not say which is missing.
 */
export function requiredOptions<K extends string>(command: string, usage: string, values: Readonly<Record<string, unknown>>, takes: Record<K, string>): Record<K, string> {
  const names = Object.keys(takes) as K[];
  const missing = names.filter((name) => typeof values[name] !== 'string' || values[name] === '').map((name) => `--${name} (${takes[name]})`);
  if (missing.length > 0) throw new CliError(`${command} needs ${listed(missing)}\n${usage}`);
  return Object.fromEntries(names.map((name) => [name, values[name]])) as Record<K, string>;
}

function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
