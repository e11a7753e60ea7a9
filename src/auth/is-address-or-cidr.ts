import { isIP } from 'node:net';

/** An IP address, or one with a prefix length its family allows (`10.0.0.0/8`, `fd00::/8`): a trusted proxy entry. */
export function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  const bits = /^[0-9]{1,3}$/.test(prefix) ? Number(prefix) : -1;
  return bits >= 0 && bits <= (family === 4 ? 32 : 128);
}
