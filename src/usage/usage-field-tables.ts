import type { UsageStyle } from './token-usage.ts';
import type { UsageFieldTable } from './usage-field-table.ts';
import { completionsUsageFields } from './usage-fields-completions.ts';
import { responsesUsageFields } from './usage-fields-responses.ts';
import { messagesUsageFields } from './usage-fields-messages.ts';
import { generateUsageFields } from './usage-fields-generate.ts';
import { embeddingsUsageFields } from './usage-fields-embeddings.ts';
import { rerankUsageFields } from './usage-fields-rerank.ts';
import { suiteUsageFields } from './usage-fields-suite.ts';

export const usageFieldTables: Readonly<Record<UsageStyle, UsageFieldTable>> = {
  completions: completionsUsageFields,
  responses: responsesUsageFields,
  messages: messagesUsageFields,
  generate: generateUsageFields,
  embeddings: embeddingsUsageFields,
  rerank: rerankUsageFields,
  suite: suiteUsageFields,
};
