import { CliError } from './cli-error.ts';

/**
 * A port or an id: plain decimal digits within [min, max]. Number() would also take "",
 * "0x1F90" and "8.080e3", so a typo would bind or select something the operator never wrote.
 */
export function parseDecimalOption(name: string, what: string, value: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new CliError(`--${name} must be ${what}, decimal digits from ${min} to ${max}, not "${value}"`);
  return n;
}
