/**
 * How each native dialect lists its models (DISC, note 12): the path, the header carrying the
 * key, extra headers, and where the ids are in the answer. Data, keyed by dialect.
 */
export const DISCOVERY_DIALECTS = {
  completions: { path: '/v1/models', keyHeader: 'authorization', bearer: true, extraHeaders: {}, list: 'data', id: 'id', stripPrefix: '' },
  messages: { path: '/v1/models', keyHeader: 'x-api-key', bearer: false, extraHeaders: { 'anthropic-version': '2023-06-01' }, list: 'data', id: 'id', stripPrefix: '' },
  generate: { path: '/v1beta/models', keyHeader: 'x-goog-api-key', bearer: false, extraHeaders: {}, list: 'models', id: 'name', stripPrefix: 'models/' },
} as const;

export type DiscoveryDialect = keyof typeof DISCOVERY_DIALECTS;
