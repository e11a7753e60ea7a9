import type { UsageStyle } from '../usage/index.ts';

/** Which usage fields a protocol's responses carry (image results use the responses names). */
export const USAGE_STYLE_BY_PROTOCOL: Readonly<Record<string, UsageStyle>> = {
  'x-completions': 'completions',
  'x-responses': 'responses',
  'x-messages': 'messages',
  'x-generate': 'generate',
  'x-images': 'responses',
  'x-chat-embeddings': 'embeddings',
  'x-embeddings': 'generate',
  rerank: 'rerank',
  decisions: 'completions',
  'x-suite': 'suite',
};
