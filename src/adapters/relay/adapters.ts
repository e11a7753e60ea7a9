import { adapterFamily } from '../channel-adapter.ts';

/** Channels that reach an operator-configured relay or gateway at a base URL or custom endpoint. */
export const relayAdapters = adapterFamily(
  { native: ['CC', 'RC', 'MS', 'GG', 'IMG'], convertsInto: [], credentialKinds: ['api_key_base_url'], proxy: true, discovery: true },
  [
    {
      channel: 'ch31',
      native: ['CC', 'RC', 'MS', 'GG', 'IMG', 'EMB', 'CT-M', 'CT-G', 'RIT', 'RRA', 'alpha-search', 'rerank', 'x-embeddings'],
      credentialKinds: ['access_key_base_url'],
    },
    {
      channel: 'ch32',
      native: ['CC', 'RC', 'MS', 'GG', 'IMG', 'EMB', 'RRA', 'alpha-search', 'rerank', 'x-embeddings'],
      nativeSubsets: { RRA: ['compaction', 'namespace_passthrough'] },
    },
    {
      channel: 'ch33',
      native: ['CC', 'RC', 'MS', 'GG', 'IMG', 'CT-M', 'CT-G', 'RRA', 'alpha-search'],
      nativeSubsets: { RRA: ['compaction', 'namespace_passthrough'] },
    },
    { channel: 'ch34', native: ['CC', 'RC', 'MS', 'GG', 'IMG', 'CT-M', 'CT-G', 'RRA'], nativeSubsets: { RRA: ['compaction'] } },
    { channel: 'ch35', native: ['CC', 'IMG', 'EMB', 'rerank'], convertsInto: ['completions'], credentialKinds: ['api_key_custom_endpoint'] },
  ],
);
