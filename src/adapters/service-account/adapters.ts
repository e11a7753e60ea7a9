import { adapterFamily } from '../channel-adapter.ts';

/**
 * Service-account channel: generate dialect for the models of its native rule, messages
 * dialect (raw predict) for the others (decisions.md §4); no managed proxy (note 14).
 */
export const serviceAccountAdapters = adapterFamily(
  { native: ['GG'], convertsInto: ['generate', 'messages'], credentialKinds: ['service_account_json'], proxy: false, discovery: true },
  [{ channel: 'ch18' }],
);
