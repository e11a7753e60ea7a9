import type { LoadedManifest } from './load-manifest.ts';
import type { ManifestProblem } from './manifest-problem.ts';
import { channelRow } from './expand-channels.ts';
import type { ProtocolsManifest } from '../src/generated/types/protocols-manifest.ts';
import type { ChannelsManifest, Mode, NoteRule } from '../src/generated/types/channels-manifest.ts';

/**
 * Cross-references the schema cannot express: ids that must exist or be unique, modes a
 * capability allows, notes naming real channels, shared-block overrides, and that every
 * N/C, N* and C cell has the rule or wire dialect the engine needs.
 */
export function validateSemantics(pm: LoadedManifest, cm: LoadedManifest): ManifestProblem[] {
  const protocols = pm.data as ProtocolsManifest;
  const channels = cm.data as ChannelsManifest;
  const problems: ManifestProblem[] = [];
  const atP = (path: (string | number)[], msg: string, key = false) => problems.push(pm.problemAt(path, msg, key));
  const atC = (path: (string | number)[], msg: string, key = false) => problems.push(cm.problemAt(path, msg, key));

  const capabilities = new Map(protocols.capabilities.map((c) => [c.id, c]));
  duplicates(protocols.capabilities.map((c) => c.id)).forEach((i) => atP(['capabilities', i, 'id'], `duplicate capability id "${protocols.capabilities[i]!.id}"`));
  duplicates(protocols.protocols.map((p) => p.id)).forEach((i) => atP(['protocols', i, 'id'], `duplicate protocol id "${protocols.protocols[i]!.id}"`));
  const allOps = protocols.protocols.flatMap((p, pi) => p.operations.map((o, oi) => ({ o, pi, oi })));
  duplicates(allOps.map((x) => x.o.id)).forEach((i) => {
    const { o, pi, oi } = allOps[i]!;
    atP(['protocols', pi, 'operations', oi, 'id'], `duplicate operation id "${o.id}"`);
  });
  const routeKeys = [...allOps.map((x) => `${x.o.method} ${x.o.path}`), ...protocols.model_lists.map((m) => `${m.method} ${m.path}`)];
  duplicates(routeKeys).forEach((i) => {
    const x = allOps[i];
    if (x) atP(['protocols', x.pi, 'operations', x.oi, 'path'], `duplicate endpoint "${routeKeys[i]}"`);
    else atP(['model_lists', i - allOps.length, 'path'], `duplicate endpoint "${routeKeys[i]}"`);
  });
  protocols.model_lists.forEach((m, mi) => {
    const namesModel = m.path.includes('{model}');
    if (namesModel !== (m.answers === 'model')) atP(['model_lists', mi, 'path'], namesModel ? `"${m.path}" names a model: declare answers: model` : `answers: model needs {model} in "${m.path}"`);
    if (/\{(?!model\})/.test(m.path)) atP(['model_lists', mi, 'path'], `"${m.path}": a model list path has no parameter but {model}`);
  });
  protocols.protocols.forEach((p, pi) => {
    if (!p.operations.some((o) => o.id === p.primary_operation)) {
      atP(['protocols', pi, 'primary_operation'], `unknown operation id "${p.primary_operation}" in protocol "${p.id}"`);
    }
    p.operations.forEach((o, oi) => {
      if (!capabilities.has(o.capability)) atP(['protocols', pi, 'operations', oi, 'capability'], `unknown capability id "${o.capability}"`);
      const r = o.resource;
      if (r === undefined) return;
      const at = ['protocols', pi, 'operations', oi, 'resource'];
      if (r.creates !== true && r.path_parameter === undefined && r.body_field === undefined) atP(at, `resource "${r.kind}": declare creates, path_parameter or body_field`);
      if (r.path_parameter !== undefined && !o.path.includes(`{${r.path_parameter}}`)) atP([...at, 'path_parameter'], `"${o.path}" has no {${r.path_parameter}}`);
      if (r.body_field !== undefined && o.body !== 'json') atP([...at, 'body_field'], `body_field "${r.body_field}" needs body: json`);
    });
  });

  const protocolIds = new Set(protocols.protocols.map((p) => p.id));
  const kinds = new Set(channels.credential_kinds.map((k) => k.id));
  const dialects = new Set(channels.dialects.map((d) => d.id));
  duplicates(channels.credential_kinds.map((k) => k.id)).forEach((i) => atC(['credential_kinds', i, 'id'], `duplicate credential kind id "${channels.credential_kinds[i]!.id}"`));
  duplicates(channels.dialects.map((d) => d.id)).forEach((i) => atC(['dialects', i, 'id'], `duplicate dialect id "${channels.dialects[i]!.id}"`));
  duplicates(channels.channels.map((c) => c.id)).forEach((i) => atC(['channels', i, 'id'], `duplicate channel id "${channels.channels[i]!.id}"`));
  duplicates(channels.notes.map((n) => n.id)).forEach((i) => atC(['notes', i, 'id'], `duplicate note id ${channels.notes[i]!.id}`));
  const channelIds = new Set(channels.channels.map((c) => c.id));
  const blocks = new Map(channels.shared_blocks.map((b) => [b.id, b]));

  channels.shared_blocks.forEach((b, bi) => {
    b.channels.forEach((id, ci) => {
      if (!channelIds.has(id)) atC(['shared_blocks', bi, 'channels', ci], `shared block "${b.id}" lists missing channel "${id}"`);
      const ch = channels.channels.find((c) => c.id === id);
      if (ch && ch.shared !== b.id) atC(['shared_blocks', bi, 'channels', ci], `channel "${id}" is listed in shared block "${b.id}" but does not declare shared: ${b.id}`);
    });
    (b.overrides ?? []).forEach((o, oi) => {
      if (!b.channels.includes(o.channel)) atC(['shared_blocks', bi, 'overrides', oi, 'channel'], `override for channel "${o.channel}" which is outside shared block "${b.id}"`);
    });
  });

  channels.channels.forEach((ch, ci) => {
    const at = (path: (string | number)[], msg: string, key = false) => atC(['channels', ci, ...path], msg, key);
    ch.credential_kinds.forEach((k, ki) => {
      if (!kinds.has(k)) at(['credential_kinds', ki], `unknown credential kind "${k}"`);
    });
    if (ch.shared !== undefined) {
      const block = blocks.get(ch.shared);
      if (!block) at(['shared'], `unknown shared block "${ch.shared}"`);
      else if (!block.channels.includes(ch.id)) at(['shared'], `channel "${ch.id}" is not listed in shared block "${ch.shared}"`);
      for (const key of ['additional', 'discovery', 'proxy'] as const) {
        if (ch[key] !== undefined) at([key], `"${key}" comes from shared block "${ch.shared}"; change it there or in an override`, true);
      }
    } else {
      for (const key of ['additional', 'discovery', 'proxy'] as const) {
        if (ch[key] === undefined) at([], `missing required key "${key}" (or "shared")`);
      }
    }
    for (const [cap, mode] of Object.entries(ch.extra ?? {}) as [string, Mode][]) {
      const decl = capabilities.get(cap);
      if (!decl || decl.table !== 'extra') at(['extra', cap], `unknown extra protocol capability "${cap}"`, true);
      else if (!decl.modes.includes(mode)) at(['extra', cap], `mode "${mode}" is not allowed for "${cap}" (allowed: ${decl.modes.join(', ')})`);
    }
    const row = channelRow(ch, channels);
    for (const [cap, mode] of row.modes) {
      const decl = capabilities.get(cap);
      if (decl && !decl.modes.includes(mode)) at([cap in ch.core ? 'core' : 'additional', cap], `mode "${mode}" is not allowed for "${cap}" (allowed: ${decl.modes.join(', ')})`);
    }
    const wire = ch.wire;
    for (const d of [wire?.default, wire?.by_model?.matching, wire?.by_model?.otherwise, ...Object.values(wire?.by_capability ?? {})]) {
      if (d !== undefined && !dialects.has(d)) at(['wire'], `unknown wire dialect "${d}"`);
    }
    for (const cap of Object.keys(wire?.by_capability ?? {})) {
      if (!capabilities.has(cap)) at(['wire', 'by_capability', cap], `unknown capability id "${cap}"`, true);
    }
        const rulesFor = (kind: NoteRule['kind'], cap?: string) =>
      channels.notes.flatMap((n) => n.rules).filter((r) => r.kind === kind && r.channels.includes(ch.id) && (cap === undefined || ('capability' in r && r.capability === cap)));
    for (const [cap, mode] of row.modes) {
      const converted = mode === 'C' || mode === 'N/C';
      if (converted && !wire?.default && !wire?.by_model && !wire?.by_capability?.[cap]) at([], `${cap} is "${mode}" but the channel declares no wire dialect to convert into`);
      if (mode === 'N/C' && rulesFor('model_rule', cap).length === 0) at([], `${cap} is "N/C" but no note declares a model_rule for ${ch.id}`);
      if (mode === 'N*' && rulesFor('native_subset', cap).length === 0) at([], `${cap} is "N*" but no note declares a native_subset for ${ch.id}`);
    }
    for (const protocol of Object.keys(ch.credential_headers ?? {})) {
      if (!protocolIds.has(protocol)) at(['credential_headers', protocol], `unknown protocol id "${protocol}"`, true);
    }
    if (wire?.by_model && rulesFor('model_rule').length === 0) at(['wire', 'by_model'], `wire.by_model needs a model_rule note for ${ch.id}`);
  });

  channels.notes.forEach((n, ni) => {
    n.channels.forEach((id, i) => {
      if (!channelIds.has(id)) atC(['notes', ni, 'channels', i], `note ${n.id} refers to missing channel "${id}"`);
    });
    n.rules.forEach((r, ri) => {
      r.channels.forEach((id, i) => {
        if (!channelIds.has(id)) atC(['notes', ni, 'rules', ri, 'channels', i], `note ${n.id} refers to missing channel "${id}"`);
        else if (!n.channels.includes(id)) atC(['notes', ni, 'rules', ri, 'channels', i], `rule of note ${n.id} names channel "${id}" which the note does not list`);
      });
      const caps = 'capabilities' in r ? r.capabilities : 'capability' in r ? [r.capability] : [];
      caps.forEach((cap) => {
        if (!capabilities.has(cap)) atC(['notes', ni, 'rules', ri, 'capability' in r ? 'capability' : 'capabilities'], `unknown capability id "${cap}"`);
      });
      if (r.kind === 'native_subset') {
        const known = new Set(allOps.filter((x) => x.o.capability === r.capability).map((x) => x.o.sub_operation));
        r.allow.forEach((s, si) => {
          if (!known.has(s)) atC(['notes', ni, 'rules', ri, 'allow', si], `unknown sub-operation "${s}" of ${r.capability}`);
        });
      }
      if (r.kind === 'extra_protocol') {
        const declaring = channels.channels.filter((c) => c.extra?.[r.capability] === 'N').map((c) => c.id);
        const diff = symmetricDifference(declaring, r.channels);
        if (diff.length) atC(['notes', ni, 'rules', ri, 'channels'], `note ${n.id} and the channels' extra.${r.capability} disagree on: ${diff.join(', ')}`);
      }
      if (r.kind === 'no_managed_proxy') {
        const withoutProxy = channels.channels.filter((c) => channelRow(c, channels).proxy === false).map((c) => c.id);
        const diff = symmetricDifference(withoutProxy, r.channels);
        if (diff.length) atC(['notes', ni, 'rules', ri, 'channels'], `note ${n.id} and the channels' proxy field disagree on: ${diff.join(', ')}`);
      }
    });
  });
  return problems;
}

function duplicates(ids: string[] | number[]): number[] {
  const seen = new Set<string | number>();
  const out: number[] = [];
  ids.forEach((id, i) => {
    if (seen.has(id)) out.push(i);
    seen.add(id);
  });
  return out;
}

function symmetricDifference(a: string[], b: string[]): string[] {
  return [...a.filter((x) => !b.includes(x)), ...b.filter((x) => !a.includes(x))].sort();
}
