import { adapterFamily } from '../channel-adapter.ts';

/** Converse-style dialect with event-stream framing (decisions.md §4); no managed proxy (note 14). */
export const converseAdapters = adapterFamily(
  { native: [], convertsInto: ['converse'], credentialKinds: ['cloud_api_key', 'cloud_credentials'], proxy: false, discovery: true },
  [{ channel: 'ch17' }],
);
