import type { UsageFieldRow } from './usage-field-table.ts';
import { generateUsageFields } from './usage-fields-generate.ts';
import { suiteUsageFields } from './usage-fields-suite.ts';

/** Where a WebSocket session's server messages carry usage. Each message's usage is added to the session's. */
export interface SessionUsageSource {
  /** Cheap test on a text frame's bytes: only frames that contain it are JSON-parsed. */
  frameHint: string;
  /** Value of the message's `type` field; absent means any message. */
  eventType?: string;
  /** Dotted path of the usage object inside the message. */
  usagePath: string;
  /** Rows sharing a unified field are summed. */
  fields: readonly UsageFieldRow[];
}

export type SessionUsageStyle = 'transcription' | 'live';

export const sessionUsageSources: Readonly<Record<SessionUsageStyle, SessionUsageSource>> = {
  /**
   * Realtime transcription: each `transcription.done` carries its audio's `usage` in chat-completions
   * names, read as an x-suite transcription's (the audio's tokens only in `total_tokens`).
   */
  transcription: { frameHint: '"transcription.done"', eventType: 'transcription.done', usagePath: 'usage', fields: suiteUsageFields.fields },
  /**
   * Live sessions: `usageMetadata` per model turn, as generate style names it, except that the
   * output is `responseTokenCount` (`candidatesTokenCount` from Vertex-style upstreams, read
   * only in its absence, so that a message naming both is not counted twice). Audio and images are the AUDIO and IMAGE entries of its
   * per-modality lists (`promptTokensDetails`, and `responseTokensDetails` or Vertex-style
   * `candidatesTokensDetails`: [{modality, tokenCount}], ai.google.dev/api/live#UsageMetadata);
   * the audio input count includes cached audio, which `cacheTokensDetails` names apart. Text
   * and video are left at the input and output prices.
   */
  live: {
    frameHint: '"usageMetadata"',
    usagePath: 'usageMetadata',
    fields: [
      ...generateUsageFields.fields.filter((row) => row.raw !== 'candidatesTokenCount'),
      { raw: 'responseTokenCount', unified: 'output_tokens', fallback: 'candidatesTokenCount' },
      { raw: 'promptTokensDetails.modality=AUDIO.tokenCount', unified: 'audio_input_tokens' },
      { raw: 'cacheTokensDetails.modality=AUDIO.tokenCount', unified: 'cached_audio_tokens' },
      { raw: 'promptTokensDetails.modality=IMAGE.tokenCount', unified: 'image_input_tokens' },
      { raw: 'responseTokensDetails.modality=AUDIO.tokenCount', unified: 'audio_output_tokens', fallback: 'candidatesTokensDetails.modality=AUDIO.tokenCount' },
    ],
  },
};
