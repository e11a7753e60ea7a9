import { createHash } from 'node:crypto';
import type { ProtocolsManifest } from '../src/generated/types/protocols-manifest.ts';
import type { ChannelsManifest } from '../src/generated/types/channels-manifest.ts';
import type { OperationEntry, ProtocolEntry } from '../src/generated/types/route-table.ts';
import { banner } from './banner.ts';
import { expandChannel } from './expand-channels.ts';
import type { ValidatedManifests } from './validate-manifests.ts';

const SOURCES = 'manifests/protocols.yaml and manifests/channels.yaml';

const literal = (value: unknown) => JSON.stringify(value, null, 2);
const idUnion = (name: string, listName: string, ids: string[]) =>
  `export const ${listName} = ${literal(ids)} as const;\nexport type ${name} = (typeof ${listName})[number];\n`;

/** The protocol table: capabilities, protocols, operations and model-list endpoints. */
export function emitProtocolTable(m: ValidatedManifests): string {
  const pm = m.protocols.data as ProtocolsManifest;
  const operations: Record<string, OperationEntry> = {};
  const protocols: Record<string, ProtocolEntry> = {};
  for (const p of pm.protocols) {
    protocols[p.id] = { id: p.id, error_style: p.error_style, primary_operation: p.primary_operation, operations: p.operations.map((o) => o.id) };
    for (const o of p.operations) {
      const entry: OperationEntry = {
        id: o.id,
        protocol: p.id,
        method: o.method,
        path: o.path,
        upstream_path: o.upstream_path ?? o.path,
        capability: o.capability,
        stream: o.stream,
        body: o.body,
        model: o.model,
        replay_safe: o.replay_safe,
        preserve_upstream_status: o.preserve_upstream_status ?? false,
        counts_tokens: o.counts_tokens ?? true,
        error_style: p.error_style,
      };
      if (o.sub_operation !== undefined) entry.sub_operation = o.sub_operation;
      if (o.resource !== undefined) entry.resource = { ...o.resource, creates: o.resource.creates ?? false };
      operations[o.id] = entry;
    }
  }
  const sortedOps = Object.fromEntries(Object.entries(operations).sort(([a], [b]) => a.localeCompare(b)));
  const capabilities = Object.fromEntries(pm.capabilities.map((c) => [c.id, c]));
  return [
    banner(SOURCES),
    `import type { CapabilityDecl, ModelListDecl } from './types/protocols-manifest.ts';`,
    `import type { OperationEntry, ProtocolEntry } from './types/route-table.ts';\n`,
    idUnion('CapabilityId', 'CAPABILITY_IDS', pm.capabilities.map((c) => c.id)),
    idUnion('ProtocolId', 'PROTOCOL_IDS', pm.protocols.map((p) => p.id)),
    idUnion('OperationId', 'OPERATION_IDS', Object.keys(sortedOps)),
    `export const CAPABILITIES: Readonly<Record<CapabilityId, CapabilityDecl>> = ${literal(capabilities)};\n`,
    `export const PROTOCOLS: Readonly<Record<ProtocolId, ProtocolEntry & { id: ProtocolId; primary_operation: OperationId; operations: OperationId[] }>> = ${literal(protocols)};\n`,
    `export const OPERATIONS: Readonly<Record<OperationId, OperationEntry & { id: OperationId; protocol: ProtocolId; capability: CapabilityId }>> = ${literal(sortedOps)};\n`,
    `export const MODEL_LISTS: readonly ModelListDecl[] = ${literal(pm.model_lists)};\n`,
  ].join('\n');
}

/** The channel table: every channel expanded to one route cell per capability. */
export function emitChannelTable(m: ValidatedManifests): string {
  const pm = m.protocols.data as ProtocolsManifest;
  const cm = m.channels.data as ChannelsManifest;
  const channels = [...cm.channels].sort((a, b) => a.id.localeCompare(b.id)).map((c) => expandChannel(c, cm, pm));
  const kinds = Object.fromEntries(cm.credential_kinds.map((k) => [k.id, k]));
  const notes = Object.fromEntries(cm.notes.map((n) => [n.id, { id: n.id, text: n.text, channels: n.channels }]));
  return [
    banner(SOURCES),
    `import type { CredentialKindDecl, DialectDecl } from './types/channels-manifest.ts';`,
    `import type { CellRoute, NoteEntry, ResolvedChannel } from './types/route-table.ts';`,
    `import type { CapabilityId } from './protocol-table.ts';\n`,
    idUnion('ChannelId', 'CHANNEL_IDS', channels.map((c) => c.id)),
    idUnion('CredentialKindId', 'CREDENTIAL_KIND_IDS', cm.credential_kinds.map((k) => k.id)),
    idUnion('DialectId', 'DIALECT_IDS', cm.dialects.map((d) => d.id)),
    `export type ChannelEntry = Omit<ResolvedChannel, 'id' | 'credential_kinds' | 'cells'> & {\n  id: ChannelId;\n  credential_kinds: CredentialKindId[];\n  cells: Record<CapabilityId, CellRoute>;\n};\n`,
    `export const CHANNELS: Readonly<Record<ChannelId, ChannelEntry>> = ${literal(Object.fromEntries(channels.map((c) => [c.id, c])))};\n`,
    `export const CREDENTIAL_KINDS: Readonly<Record<CredentialKindId, CredentialKindDecl>> = ${literal(kinds)};\n`,
    `export const DIALECTS: readonly DialectDecl[] = ${literal(cm.dialects)};\n`,
    `export const NOTES: Readonly<Record<number, NoteEntry>> = ${literal(notes)};\n`,
  ].join('\n');
}

/** A digest of both manifests, shown by /api/system so operators can tell builds apart. */
export function emitDigest(m: ValidatedManifests): string {
  const hash = createHash('sha256').update(m.protocols.source).update('\0').update(m.channels.source).digest('hex');
  return `${banner(SOURCES)}\nexport const MANIFEST_DIGEST = '${hash}';\n`;
}
