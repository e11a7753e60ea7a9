/** A streamed request of one protocol: the channel that serves it natively, its path and body, and where its AccessKey goes. */
export interface StreamStyle {
  protocol: string;
  channel: string;
  path: string;
  body: Record<string, unknown>;
  headers: (key: string) => Record<string, string>;
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
const GENERATE_BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

/** One streamed request per protocol style, for a Group serving `team-m`; Google's stream both as SSE and as a JSON array. */
export const STREAM_STYLES: Record<string, StreamStyle> = {
  completions: { protocol: 'x-completions', channel: 'ch02', path: '/v1/chat/completions', body: { model: 'team-m', stream: true, messages: [{ role: 'user', content: 'hi' }] }, headers: bearer },
  responses: { protocol: 'x-responses', channel: 'ch09', path: '/v1/responses', body: { model: 'team-m', stream: true, input: 'hi' }, headers: bearer },
  messages: { protocol: 'x-messages', channel: 'ch14', path: '/v1/messages', body: { model: 'team-m', stream: true, max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] }, headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }) },
  'generate alt=sse': { protocol: 'x-generate', channel: 'ch15', path: '/v1beta/models/team-m:streamGenerateContent?alt=sse', body: GENERATE_BODY, headers: (key) => ({ 'x-goog-api-key': key }) },
  'generate array': { protocol: 'x-generate', channel: 'ch15', path: '/v1beta/models/team-m:streamGenerateContent', body: GENERATE_BODY, headers: (key) => ({ 'x-goog-api-key': key }) },
};
