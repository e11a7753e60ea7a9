import { adapterFamily } from '../channel-adapter.ts';

/** API-key channel whose upstream speaks the generate dialect natively. */
export const generateNativeAdapters = adapterFamily(
  { native: ['GG', 'CT-G', 'x-embeddings'], convertsInto: ['generate'], credentialKinds: ['api_key'], proxy: true, discovery: true },
  [{ channel: 'ch15' }],
);
