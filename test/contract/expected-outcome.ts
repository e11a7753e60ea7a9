import { CAPABILITIES, CHANNELS, CREDENTIAL_KINDS, type CapabilityId, type CellRoute, type ChannelId, type CredentialKindId } from '../../src/generated/index.ts';
import type { RefusalReason } from '../../src/engine/index.ts';
import { staticKindOf, type Operation } from '../dataplane/helpers/dataplane-scenarios.ts';
import { externalModel, upstreamModel } from '../dataplane/helpers/native-requests.ts';

// What the data plane must do with one operation on one channel, read from the manifest cell
// and the declared tables only (never from the route engine under test), so that the
// behavioural contract suite and the code can disagree.

/**
 * The refusals the sweep can meet, with the statuses written here from docs/design-choices.md
 * (Engine: route refusals are 400) and docs/data-plane.md (`no_available_credential` is 503),
 * never read from REFUSAL_REASONS, so that a status changed in the code under test fails.
 */
const DOCUMENTED_STATUS = {
  route_not_declared: 400,
  not_a_conversation_channel: 400,
  restricted_by_channel_note: 400,
  operation_outside_native_subset: 400,
  conversion_not_available: 400,
  no_available_credential: 503,
} as const satisfies Partial<Record<RefusalReason, number>>;

type SweepRefusal = keyof typeof DOCUMENTED_STATUS;

export type Expected = { native: true } | { native: false; code: SweepRefusal; status: number };

/** One request of the sweep: the model the client names, the one the Group maps it to, and what must happen. */
export interface SweepCase {
  label: string;
  external: string;
  upstream: string;
  expected: Expected;
  /** The side of an N/C cell's model rule the case is on. */
  side?: 'native' | 'converted';
}

const refused = (code: SweepRefusal): Expected => ({ native: false, code, status: DOCUMENTED_STATUS[code] });

/** `*` in a declared model pattern stands for any run of characters. */
function matchesDeclared(model: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => new RegExp(`^${p.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(model));
}

/** The refusal a `-` cell gets: the channel's not-a-conversation note for core capabilities, the cell's own note, else no route. */
function undeclared(channel: ChannelId, cap: CapabilityId): Expected {
  const entry = CHANNELS[channel];
  if (entry.not_conversation_note !== undefined && CAPABILITIES[cap].table === 'core') return refused('not_a_conversation_channel');
  if (entry.cells[cap].unsupported_note !== undefined) return refused('restricted_by_channel_note');
  return refused('route_not_declared');
}

/**
 * Whether a note of the cell refuses the operation itself: its sub-operation is the one request
 * feature the operation declares. The sweep's bodies are plain-text, single, non-streaming and
 * continue nothing, so the notes' conditions on the other features (stream, image_count,
 * input_kind, output_format, previous_response) never apply to them.
 */
function refusedByNote(cell: CellRoute, op: Operation): boolean {
  return cell.limits.some(
    (limit) =>
      limit.mode === cell.mode &&
      limit.refuse_when.some((c) => c.feature === 'sub_operation' && op.sub_operation !== undefined && (c.equals !== undefined ? c.equals === op.sub_operation : c.not_equals !== undefined && c.not_equals !== op.sub_operation)),
  );
}

/**
 * The requests of `op` on `channel`: one, or for a cell whose route depends on the model (N/C)
 * one per side, with a model on each side of the cell's declared patterns.
 */
export function sweepCases(channel: ChannelId, op: Operation): SweepCase[] {
  if (uncredentialedReason(channel) === undefined) return declaredCases(channel, op);
  return declaredCases(channel, op).map((c) => (c.expected.native ? { ...c, label: `${c.label}, no credential`, expected: refused('no_available_credential') } : c));
}

/** What the cell declares for `op`, as if the channel's Group had a credential to send. */
function declaredCases(channel: ChannelId, op: Operation): SweepCase[] {
  const cap = op.capability as CapabilityId;
  const cell = CHANNELS[channel].cells[cap];
  const plain = (expected: Expected): SweepCase[] => [{ label: cell.mode, external: externalModel(op), upstream: upstreamModel(op), expected }];
  if (cell.mode === '-') return plain(undeclared(channel, cap));
  const outsideSubset = cell.mode === 'N*' && !(op.sub_operation !== undefined && (cell.native_subset?.allow ?? []).includes(op.sub_operation));
  if (outsideSubset) return plain(refused('operation_outside_native_subset'));
  if (refusedByNote(cell, op)) return plain(refused('restricted_by_channel_note'));
  switch (cell.mode) {
    case 'C':
      return plain(refused('conversion_not_available'));
    case 'N':
    case 'N*':
      return plain({ native: true });
    case 'N/C': {
      const patterns = cell.model_rule?.native_models ?? [];
      const nativeSide = patterns[0]?.replaceAll('*', `contract-${op.id}`);
      const convertedSide = upstreamModel(op);
      if (nativeSide === undefined || matchesDeclared(convertedSide, patterns)) throw new Error(`${channel} ${cap}: no model on each side of ${JSON.stringify(patterns)}`);
      return [
        { label: `N/C native side (${nativeSide})`, side: 'native', external: `${externalModel(op)}-native-side`, upstream: nativeSide, expected: { native: true } },
        { label: `N/C converted side (${convertedSide})`, side: 'converted', external: externalModel(op), upstream: convertedSide, expected: refused('conversion_not_available') },
      ];
    }
  }
}

/**
 * Why the channel's Group gets no credential, or undefined when it gets one: without a
 * credential kind of the static flow there is no secret to seed until the adapters issue's
 * authorization flows, so its native requests must be refused as `no_available_credential`
 * (503) before any upstream request, while its refusals are checked as on every channel.
 */
export function uncredentialedReason(channel: ChannelId): string | undefined {
  if (staticKindOf(channel) !== undefined) return undefined;
  const kinds = CHANNELS[channel].credential_kinds as CredentialKindId[];
  const flows = kinds.map((k) => `${k} (${CREDENTIAL_KINDS[k]?.flow ?? 'undeclared'} flow)`);
  return `${channel} declares no static credential kind, only ${flows.join(', ')}: its credentials need an authorization flow`;
}
