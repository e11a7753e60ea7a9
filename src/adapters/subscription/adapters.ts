import { adapterFamily } from '../channel-adapter.ts';

/** Subscription channels authorized with OAuth or device authorization. */
export const subscriptionAdapters = adapterFamily(
  { native: ['RC', 'RIT'], convertsInto: ['responses'], credentialKinds: ['oauth', 'oauth_json'], proxy: true, discovery: true },
  [
    { channel: 'ch10', native: ['RC', 'RIT', 'IMG', 'x-live'] },
    { channel: 'ch11', native: ['MS', 'CT-M'], convertsInto: ['messages'] },
    { channel: 'ch12', native: ['GG', 'CT-G'], convertsInto: ['generate'] },
    { channel: 'ch13', credentialKinds: ['device_authorization', 'oauth_json'] },
  ],
);
