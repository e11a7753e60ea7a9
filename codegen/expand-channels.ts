import type { ChannelsManifest, ChannelDecl, Mode, NoteRule } from '../src/generated/types/channels-manifest.ts';
import type { ProtocolsManifest } from '../src/generated/types/protocols-manifest.ts';
import type { CellRoute, ResolvedChannel, WireChoice } from '../src/generated/types/route-table.ts';

export interface ChannelRow {
  modes: [string, Mode][];
  discovery: boolean | undefined;
  proxy: boolean | undefined;
}

/** A channel's matrix row after its shared block and that block's override for it apply. */
export function channelRow(ch: ChannelDecl, manifest: ChannelsManifest): ChannelRow {
  const block = ch.shared ? manifest.shared_blocks.find((b) => b.id === ch.shared) : undefined;
  const override = block?.overrides?.find((o) => o.channel === ch.id);
  const additional = { ...(block?.additional ?? ch.additional ?? {}), ...(override?.additional ?? {}) };
  return {
    modes: [...Object.entries(ch.core), ...Object.entries(additional)] as [string, Mode][],
    discovery: override?.discovery ?? block?.discovery ?? ch.discovery,
    proxy: override?.proxy ?? block?.proxy ?? ch.proxy,
  };
}

/** Expands one validated channel into the flat, per-capability record the engine reads. */
export function expandChannel(ch: ChannelDecl, channels: ChannelsManifest, protocols: ProtocolsManifest): ResolvedChannel {
  const row = channelRow(ch, channels);
  const declared = new Map<string, Mode>([...row.modes, ...(Object.entries(ch.extra ?? {}) as [string, Mode][])]);
  const rules = channels.notes.flatMap((n) => n.rules.map((rule) => ({ note: n.id, rule }))).filter(({ rule }) => rule.channels.includes(ch.id));
  const modelRule = rules.find((r) => r.rule.kind === 'model_rule');
  const flagNote = (kind: NoteRule['kind']) => rules.find((r) => r.rule.kind === kind)?.note;

  const cells: Record<string, CellRoute> = {};
  for (const cap of protocols.capabilities) {
    const mode = declared.get(cap.id) ?? '-';
    const cell: CellRoute = { mode, limits: [] };
    if (mode === 'C' || mode === 'N/C') cell.wire = wireFor(ch, cap.id, modelRule?.rule);
    for (const { note, rule } of rules) {
      if (rule.kind === 'limit' && rule.capability === cap.id) {
        cell.limits.push({ note, mode: rule.mode, restrictions: rule.restrictions, refuse_when: rule.refuse_when });
      } else if (rule.kind === 'native_subset' && rule.capability === cap.id) {
        cell.native_subset = { note, allow: rule.allow };
      } else if (rule.kind === 'model_rule' && rule.capability === cap.id) {
        cell.model_rule = { note, native_models: rule.native_models };
      } else if (rule.kind === 'unsupported' && rule.capabilities.includes(cap.id)) {
        cell.unsupported_note = note;
      }
    }
    cells[cap.id] = cell;
  }
  const out: ResolvedChannel = {
    id: ch.id,
    credential_kinds: ch.credential_kinds,
    discovery: row.discovery ?? false,
    proxy: row.proxy ?? false,
    stream_usage: ch.stream_usage ?? 'requested',
    notes: channels.notes.filter((n) => n.channels.includes(ch.id)).map((n) => n.id),
    cells,
  };
  if (ch.shared) out.shared_block = ch.shared;
  if (ch.credential_headers) out.credential_headers = ch.credential_headers;
  const notConversation = flagNote('not_conversation');
  const relay = flagNote('relay_dependent');
  const noProxy = flagNote('no_managed_proxy');
  if (notConversation !== undefined) out.not_conversation_note = notConversation;
  if (relay !== undefined) out.relay_dependent_note = relay;
  if (noProxy !== undefined) out.no_managed_proxy_note = noProxy;
  return out;
}

function wireFor(ch: ChannelDecl, cap: string, modelRule: NoteRule | undefined): WireChoice {
  const fixed = ch.wire?.by_capability?.[cap] ?? ch.wire?.default;
  if (fixed) return { kind: 'fixed', dialect: fixed };
  const byModel = ch.wire?.by_model;
  const natives = modelRule?.kind === 'model_rule' ? modelRule.native_models : [];
  return { kind: 'by_model', native_models: natives, matching: byModel?.matching ?? '', otherwise: byModel?.otherwise ?? '' };
}
