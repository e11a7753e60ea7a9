import type { SessionUsageStyle } from '../usage/index.ts';

/** Where each WebSocket protocol's server messages carry usage (`x-suite`: realtime transcription). */
export const SESSION_USAGE_STYLE_BY_PROTOCOL: Readonly<Record<string, SessionUsageStyle>> = {
  'x-suite': 'transcription',
  'x-live': 'live',
};
