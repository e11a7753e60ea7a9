import { BlockList, isIP } from 'node:net';
import { isAddressOrCidr } from './is-address-or-cidr.ts';

/**
 * The address lockout counts against: the socket's peer, unless that peer is a configured
 * trusted proxy, in which case X-Forwarded-For is walked from the right past trusted hops.
 */
export function peerAddress(socketAddress: string | undefined, forwardedFor: string | undefined, trustedProxies: readonly string[]): string {
  const direct = normalize(socketAddress ?? 'unknown');
  if (trustedProxies.length === 0 || !forwardedFor) return direct;
  const trusted = buildBlockList(trustedProxies);
  if (!isTrusted(trusted, direct)) return direct;
  const hops = forwardedFor
    .split(',')
    .map((s) => normalize(withoutPort(s.trim())))
    .filter((s) => s !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as string;
    if (isIP(hop) === 0) return direct;
    if (!isTrusted(trusted, hop)) return hop;
  }
  return hops[0] ?? direct;
}

/**
 * A hop as some proxies write it, with the client's port: Azure Application Gateway's list is
 * of `IP:port` (`[IPv6]:port`). Without it, the address; a bare IPv6 address stays as it is.
 */
function withoutPort(hop: string): string {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(hop);
  if (bracketed !== null) return bracketed[2] === undefined || Number(bracketed[2]) <= 65535 ? (bracketed[1] as string) : hop;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(hop);
  return v4 !== null && Number(v4[2]) <= 65535 ? (v4[1] as string) : hop;
}

function normalize(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

function isTrusted(list: BlockList, address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

function buildBlockList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    // The API and the config file's check refuse a bad entry; one that got past them is no proxy.
    if (!isAddressOrCidr(entry)) continue;
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}
