import { resolve } from '../engine/index.ts';
import { CAPABILITIES, CHANNELS, CREDENTIAL_KINDS, NOTES, OPERATIONS, PROTOCOLS, PROTOCOL_IDS, type ChannelId, type OperationId } from '../generated/index.ts';
import { channelRequiresBaseUrl } from './channel-rules.ts';

/**
 * A channel as the management API describes it, read from the generated tables: its
 * credential kinds with their fields, and for every protocol and operation the declared
 * symbol and the engine's answer without a model.
 */
export function describeChannel(id: ChannelId) {
  const ch = CHANNELS[id];
  const capabilities = Object.fromEntries(
    PROTOCOL_IDS.map((protocol) => [
      protocol,
      Object.fromEntries(
        (PROTOCOLS[protocol].operations as readonly OperationId[]).map((operation) => {
          const op = OPERATIONS[operation];
          return [operation, { capability: op.capability, table: CAPABILITIES[op.capability].table, declared: ch.cells[op.capability].mode, route: resolve({ protocol, operation, channel: id }) }];
        }),
      ),
    ]),
  );
  return {
    id,
    credential_kinds: ch.credential_kinds.map((k) => CREDENTIAL_KINDS[k]),
    requires_base_url: channelRequiresBaseUrl(id),
    discovery: ch.discovery,
    proxy: ch.proxy,
    notes: ch.notes.map((n) => ({ id: n, text: NOTES[n]?.text ?? '' })),
    capabilities,
  };
}
