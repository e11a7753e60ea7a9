import type { UsageFieldTable } from './usage-field-table.ts';

/**
 * The x-suite operations (OCR, FIM, audio, moderation, classification): `usage` in the body,
 * under either naming scheme. OpenAI's token-billed transcriptions and speech answer
 * input_tokens/output_tokens (with input_token_details.text_tokens/audio_tokens that
 * input_tokens already sums: the audio part is the unified `audio_input_tokens`; OpenAI's
 * Transcription.Usage.Tokens, gpt-4o-transcribe and gpt-4o-mini-transcribe,
 * platform.openai.com/docs/api-reference/audio/json-object); speech reports no audio part, its
 * output being all audio (priced at the model's output price); OCR, FIM and Mistral-style transcriptions answer
 * prompt_tokens/completion_tokens. An upstream sends one scheme, never both, so summing the
 * rows of a unified field reads whichever came. Mistral's transcriptions (voxtral, realtime ones
 * too) count the text prompt alone in prompt_tokens: the audio's tokens are only in
 * total_tokens (`prompt_tokens` 5, `completion_tokens` 24, `total_tokens` 404, and
 * `prompt_tokens_details.cached_tokens` 368, cached audio), so what the total holds beyond
 * prompt and completion is audio input. A duration usage (`seconds`) counts no tokens.
 * In streams the usage is a top-level `usage` of any event: FIM's final chunk, OpenAI's
 * `transcript.text.done`, Mistral's `transcription.done` and the `speech.audio.done` events
 * (one source for all, so the events' bytes can be read without parsing them).
 */
export const suiteUsageFields: UsageFieldTable = {
  style: 'suite',
  bodyUsagePath: 'usage',
  fields: [
    { raw: 'prompt_tokens', unified: 'input_tokens' },
    { raw: 'input_tokens', unified: 'input_tokens' },
    { raw: 'completion_tokens', unified: 'output_tokens' },
    { raw: 'output_tokens', unified: 'output_tokens' },
    { raw: 'prompt_tokens_details.cached_tokens', unified: 'cached_tokens' },
    { raw: 'input_token_details.audio_tokens', unified: 'audio_input_tokens' },
    { raw: 'total_tokens', unified: 'input_tokens', lessSumOf: ['prompt_tokens', 'completion_tokens'] },
    { raw: 'total_tokens', unified: 'audio_input_tokens', lessSumOf: ['prompt_tokens', 'completion_tokens'] },
  ],
  stream: [{ usagePath: 'usage', merge: 'replace' }],
  streamHint: /"usage"\s*:\s*\{/,
};
