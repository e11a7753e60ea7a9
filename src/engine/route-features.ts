/** What a request asks for, as far as the matrix notes' rules need to know. */
export interface RouteFeatures {
  stream?: boolean;
  /** Number of images requested (image generation `n`). */
  image_count?: number;
  /** Kind of the input: plain text, token ids, or something else (images, mixed). */
  input_kind?: 'text' | 'token_ids' | 'other';
  /** Requested image output: base64 data or a URL. */
  output_format?: 'base64' | 'url';
  /** Overrides the operation's own sub-operation (generation, editing, compaction, ...). */
  sub_operation?: string;
  /** The request continues state the upstream stored (previous_response_id, or a conversation). */
  previous_response?: boolean;
  /** The request asks the upstream to keep the response and run it in the background (`background: true`). */
  background?: boolean;
}

export type FeatureName = keyof RouteFeatures;
