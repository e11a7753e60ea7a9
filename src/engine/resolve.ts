import { CAPABILITIES, CHANNELS, OPERATIONS, PROTOCOLS, type CellRoute, type ChannelEntry, type OperationEntry } from '../generated/index.ts';
import { describeCondition, findLimitBreach } from './check-limits.ts';
import { matchesModelPattern } from './match-model-pattern.ts';
import type { RefusalReason } from './refusal-reasons.ts';
import type { RouteFeatures } from './route-features.ts';

export interface ResolveInput {
  protocol: string;
  operation: string;
  channel: string;
  model?: string;
  features?: RouteFeatures;
}

export type DeclaredMode = 'N' | 'C' | 'N/C' | 'N*';

export interface RouteAnswer {
  ok: true;
  declared: DeclaredMode;
  effective: 'native' | 'converted';
  /** The upstream dialect a converted route goes through. */
  wire?: string;
  /** What the route is limited to (from the matrix notes), e.g. `single_image`. */
  restrictions: string[];
  /** Matrix notes that shaped this answer. */
  notes: number[];
}

export interface Refusal {
  ok: false;
  reason_code: RefusalReason;
  note?: number;
  detail: string;
}

export type Resolution = RouteAnswer | Refusal;

const has = <T extends object>(table: T, key: string): key is Extract<keyof T, string> => Object.hasOwn(table, key);

/**
 * The engine's answer for one protocol x operation x channel (x model) cell. Pure: table
 * lookups and the note rules, no I/O.
 */
export function resolve(input: ResolveInput): Resolution {
  const { protocol, operation, channel, model } = input;
  if (!has(PROTOCOLS, protocol)) return refuse('unknown_protocol', `protocol "${protocol}" is not one of the declared protocols`);
  if (!has(OPERATIONS, operation) || OPERATIONS[operation].protocol !== protocol) {
    return refuse('unknown_operation', `protocol "${protocol}" has no operation "${operation}"`);
  }
  if (!has(CHANNELS, channel)) return refuse('unknown_channel', `channel "${channel}" is not declared`);
  const op = OPERATIONS[operation];
  const ch = CHANNELS[channel];
  const cell = ch.cells[op.capability];
  const features: RouteFeatures = { sub_operation: op.sub_operation, ...input.features };
  if (cell.mode === '-') return refuseUndeclared(ch, op, cell);

  const notes = new Set<number>();
  const restrictions: string[] = [];
  let effective: RouteAnswer['effective'] = cell.mode === 'C' ? 'converted' : 'native';
  if (cell.mode === 'N/C') {
    const rule = cell.model_rule;
    if (!rule) return refuse('route_not_declared', `${channel} declares ${op.capability} as N/C without a model rule`);
    if (model === undefined) return refuse('model_required', `${channel} picks native or converted ${op.capability} routing by model`, rule.note);
    notes.add(rule.note);
    effective = matchesModelPattern(model, rule.native_models) ? 'native' : 'converted';
  }
  if (cell.mode === 'N*') {
    const subset = cell.native_subset;
    const sub = features.sub_operation;
    if (!subset) return refuse('route_not_declared', `${channel} declares ${op.capability} as N* without a subset`);
    notes.add(subset.note);
    if (sub === undefined || !subset.allow.includes(sub)) {
      return refuse('operation_outside_native_subset', `${channel} supports only ${subset.allow.join(', ')} of ${op.capability} natively; "${sub ?? operation}" is not among them`, subset.note);
    }
    restrictions.push(`native_subset:${subset.allow.join(',')}`);
  }

  let wire: string | undefined;
  if (effective === 'converted') {
    const choice = cell.wire;
    if (!choice) return refuse('route_not_declared', `${channel} declares no wire dialect for ${op.capability}`);
    if (choice.kind === 'fixed') wire = choice.dialect;
    else if (model === undefined) return refuse('model_required', `${channel} picks its upstream dialect by model`);
    else wire = matchesModelPattern(model, choice.native_models) ? choice.matching : choice.otherwise;
  }

  const breach = findLimitBreach(cell.limits, cell.mode, features);
  if (breach) {
    return refuse('restricted_by_channel_note', `${channel} ${op.capability} (${cell.mode}) refuses ${describeCondition(breach.condition)}`, breach.note);
  }
  for (const limit of cell.limits) {
    if (limit.mode !== cell.mode) continue;
    notes.add(limit.note);
    restrictions.push(...limit.restrictions);
  }
  if (ch.relay_dependent_note !== undefined) {
    notes.add(ch.relay_dependent_note);
    restrictions.push('capability_depends_on_relay');
  }

  const answer: RouteAnswer = { ok: true, declared: cell.mode, effective, restrictions, notes: [...notes].sort((a, b) => a - b) };
  if (wire !== undefined) answer.wire = wire;
  return answer;
}

function refuseUndeclared(ch: ChannelEntry, op: OperationEntry, cell: CellRoute): Refusal {
  if (ch.not_conversation_note !== undefined && CAPABILITIES[op.capability as keyof typeof CAPABILITIES]?.table === 'core') {
    return refuse('not_a_conversation_channel', `${ch.id} has no conversation routes and is not used as a chat channel`, ch.not_conversation_note);
  }
  if (cell.unsupported_note !== undefined) {
    return refuse('restricted_by_channel_note', `${ch.id} does not support ${op.capability} ("${op.id}")`, cell.unsupported_note);
  }
  return refuse('route_not_declared', `${ch.id} declares no route for ${op.capability} ("${op.id}")`);
}

/** A refusal a matrix note caused names the note in its detail, which the client's error message carries. */
function refuse(reason_code: RefusalReason, detail: string, note?: number): Refusal {
  return note === undefined ? { ok: false, reason_code, detail } : { ok: false, reason_code, note, detail: `${detail} (note ${note})` };
}
