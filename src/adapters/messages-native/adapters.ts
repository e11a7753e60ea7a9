import { adapterFamily } from '../channel-adapter.ts';

/** API-key channel whose upstream speaks the messages dialect natively. */
export const messagesNativeAdapters = adapterFamily(
  { native: ['MS', 'CT-M'], convertsInto: ['messages'], credentialKinds: ['api_key'], proxy: true, discovery: true },
  [{ channel: 'ch14' }],
);
