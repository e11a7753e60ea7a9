import { CAPABILITY_IDS, type CapabilityId, type ChannelEntry } from '../../src/generated/index.ts';
import type { ChannelAdapter } from '../../src/adapters/index.ts';

/** Dialects a cell's converted route may go through, per the manifest. */
function wireDialects(entry: ChannelEntry, cap: CapabilityId): string[] {
  const wire = entry.cells[cap].wire;
  if (!wire) return [];
  return wire.kind === 'fixed' ? [wire.dialect] : [wire.matching, wire.otherwise];
}

/**
 * Disagreements between the manifest and an adapter for one cell, each naming channel and
 * cell. Empty means they agree.
 */
export function cellDisagreements(entry: ChannelEntry, cap: CapabilityId, adapter: ChannelAdapter): string[] {
  const cell = entry.cells[cap];
  const at = `${entry.id} ${cap}`;
  const out: string[] = [];
  const forwards = adapter.native.includes(cap);
  const needsNative = cell.mode === 'N' || cell.mode === 'N*' || cell.mode === 'N/C';
  if (needsNative && !forwards) out.push(`${at}: manifest declares ${cell.mode} but the adapter has no native forwarder`);
  if (!needsNative && forwards) out.push(`${at}: the adapter forwards natively but the manifest declares ${cell.mode}`);
  for (const dialect of wireDialects(entry, cap)) {
    if (!adapter.convertsInto.includes(dialect as never)) out.push(`${at}: manifest declares ${cell.mode} via "${dialect}" but the adapter does not convert into it`);
  }
  const subset = adapter.nativeSubsets?.[cap];
  if (cell.mode === 'N*' && JSON.stringify(subset ?? []) !== JSON.stringify(cell.native_subset?.allow ?? [])) {
    out.push(`${at}: manifest keeps ${JSON.stringify(cell.native_subset?.allow)} natively, the adapter ${JSON.stringify(subset ?? [])}`);
  }
  if (cell.mode !== 'N*' && subset) out.push(`${at}: the adapter declares a native subset but the manifest declares ${cell.mode}`);
  return out;
}

/** Channel-level disagreements: credential kinds, proxy, discovery, dialects never used. */
export function channelDisagreements(entry: ChannelEntry, adapter: ChannelAdapter): string[] {
  const out: string[] = [];
  const sorted = (xs: readonly string[]) => JSON.stringify([...xs].sort());
  if (sorted(entry.credential_kinds) !== sorted(adapter.credentialKinds)) {
    out.push(`${entry.id} credential: manifest ${sorted(entry.credential_kinds)}, adapter ${sorted(adapter.credentialKinds)}`);
  }
  if (entry.proxy !== adapter.proxy) out.push(`${entry.id} PROXY: manifest ${entry.proxy ? 'yes' : 'no'}, adapter ${adapter.proxy ? 'yes' : 'no'}`);
  if (entry.discovery !== adapter.discovery) out.push(`${entry.id} DISC: manifest ${entry.discovery ? 'yes' : 'no'}, adapter ${adapter.discovery ? 'yes' : 'no'}`);
  const used = new Set(CAPABILITY_IDS.flatMap((cap) => wireDialects(entry, cap)));
  for (const dialect of adapter.convertsInto) {
    if (!used.has(dialect)) out.push(`${entry.id}: the adapter converts into "${dialect}" but no cell of the manifest routes through it`);
  }
  for (const cap of adapter.native) {
    if (!CAPABILITY_IDS.includes(cap)) out.push(`${entry.id} ${cap}: the adapter forwards a capability the manifests do not know`);
  }
  return out;
}
