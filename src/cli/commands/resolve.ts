import { parseArgs } from 'node:util';
import { resolve, type Resolution } from '../../engine/index.ts';
import { unservedReason } from '../../dataplane/served-route.ts';
import { CHANNEL_IDS, PROTOCOL_IDS, PROTOCOLS, type ProtocolId } from '../../generated/index.ts';
import { CliError } from '../cli-error.ts';
import { protocolOption } from '../protocol-option.ts';
import { requiredOptions } from '../required-options.ts';

/** Its usage line, which `switchyard --help` and `resolve --help` print too. */
export const RESOLVE_USAGE = 'resolve --protocol P --operation O --channel chNN [--model M] [--stream] [--json]';
const USAGE = `usage: switchyard ${RESOLVE_USAGE}`;

export function runResolve(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: {
      protocol: { type: 'string' },
      operation: { type: 'string' },
      channel: { type: 'string' },
      model: { type: 'string' },
      stream: { type: 'boolean' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { protocol, operation, channel } = requiredOptions('resolve', USAGE, values, {
    protocol: `one of: ${PROTOCOL_IDS.join(', ')}`,
    operation: operationsOf(values.protocol),
    channel: `${CHANNEL_IDS[0]} to ${CHANNEL_IDS.at(-1)}`,
  });
  checkDeclared(protocol, operation, channel);
  const answer = resolve({ protocol, operation, channel, ...(values.model ? { model: values.model } : {}), ...(values.stream ? { features: { stream: true } } : {}) });
  const unserved = unservedReason(answer);
  const shown = unserved ? { ...answer, served: false, unserved_reason: unserved } : answer;
  process.stdout.write(values.json ? `${JSON.stringify(shown, null, 2)}\n` : `${describe(answer, unserved)}\n`);
  return answer.ok && !unserved ? 0 : 1;
}

/**
 * A protocol, operation or channel the manifests do not declare is a usage error (exit 2), as
 * for inspect: the engine's unknown_* answer would exit 1 like a refusal of a real cell.
 */
function checkDeclared(protocol: string, operation: string, channel: string): void {
  const operations: readonly string[] = PROTOCOLS[protocolOption(protocol, USAGE)].operations;
  if (!operations.includes(operation)) throw new CliError(`--operation of ${protocol} must be one of ${operations.join(', ')}, not "${operation}"\n${USAGE}`);
  if (!(CHANNEL_IDS as readonly string[]).includes(channel)) throw new CliError(`--channel must be one of ${CHANNEL_IDS[0]} to ${CHANNEL_IDS.at(-1)}, not "${channel}"\n${USAGE}`);
}

/** What --operation takes: the protocol's operations when the protocol is known. */
function operationsOf(protocol: string | undefined): string {
  if (protocol !== undefined && Object.hasOwn(PROTOCOLS, protocol)) return `one of: ${PROTOCOLS[protocol as ProtocolId].operations.join(', ')}`;
  return 'an operation id of the protocol, as manifests/protocols.yaml names them';
}

function describe(r: Resolution, unserved: string | undefined): string {
  // The detail of a refusal a note caused ends with that note.
  if (!r.ok) return `refused: ${r.reason_code}: ${r.detail}`;
  const parts = [`${r.declared} -> ${r.effective}`];
  if (r.wire) parts.push(`wire ${r.wire}`);
  if (r.restrictions.length) parts.push(`restrictions: ${r.restrictions.join(', ')}`);
  if (r.notes.length) parts.push(`notes: ${r.notes.join(', ')}`);
  if (unserved) parts.push(`not served by this version: ${unserved}`);
  return parts.join('; ');
}
