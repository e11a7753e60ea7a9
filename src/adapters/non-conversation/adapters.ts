import { adapterFamily } from '../channel-adapter.ts';

/** Channels with no conversation routes (note 7): decisions and rerank only. */
export const nonConversationAdapters = adapterFamily(
  { native: [], convertsInto: [], credentialKinds: ['api_key'], proxy: true, discovery: true },
  [
    { channel: 'ch01', native: ['decisions'] },
    { channel: 'ch08', native: ['rerank'], discovery: false },
  ],
);
