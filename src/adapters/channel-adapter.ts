import type { CapabilityId, ChannelId, CredentialKindId, DialectId } from '../generated/index.ts';

/**
 * What a channel's adapter implements. The contract suite checks this against the
 * manifest cell by cell, so the two are written independently and must agree.
 */
export interface ChannelAdapter {
  channel: ChannelId;
  /** Capabilities it forwards natively (N, N*, the native side of N/C, extra protocols). */
  native: CapabilityId[];
  /** For N* cells: the sub-operations the native forwarder handles. */
  nativeSubsets?: Partial<Record<CapabilityId, string[]>>;
  /** Upstream wire dialects its converted routes go through. */
  convertsInto: DialectId[];
  credentialKinds: CredentialKindId[];
  proxy: boolean;
  discovery: boolean;
}

/** A family's adapters share defaults; each channel states only what differs. */
export function adapterFamily(defaults: Omit<ChannelAdapter, 'channel'>, channels: (Partial<ChannelAdapter> & { channel: ChannelId })[]): ChannelAdapter[] {
  return channels.map((c) => ({ ...defaults, ...c }));
}
