import { PROTOCOL_IDS, PROTOCOLS, type ProtocolId } from '../generated/index.ts';
import { CliError } from './cli-error.ts';

/** A --protocol value the manifests declare; any other is a usage error (exit 2), with the ids it takes. */
export function protocolOption(value: string, usage: string): ProtocolId {
  if (!Object.hasOwn(PROTOCOLS, value)) throw new CliError(`--protocol must be one of ${PROTOCOL_IDS.join(', ')}, not "${value}"\n${usage}`);
  return value as ProtocolId;
}
