import { adapterFamily } from '../channel-adapter.ts';

/** Completions dialect on deployment-style URLs (decisions.md §4); no managed proxy (note 14). */
export const deploymentAdapters = adapterFamily(
  { native: [], convertsInto: ['deployment-completions'], credentialKinds: ['api_key', 'directory_identity'], proxy: false, discovery: true },
  [{ channel: 'ch16' }],
);
