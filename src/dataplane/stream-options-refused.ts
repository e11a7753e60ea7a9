/**
 * Whether an upstream's error answer refuses the `stream_options` the gateway added to a
 * completions stream on the client's behalf: a 400 or 422 whose body names the member (Groq
 * answered 400 "property 'stream_options' is unsupported", Azure "Unrecognized request argument
 * supplied: stream_options", pydantic-validated servers 422 `extra_forbidden` with `loc`
 * `["body", "stream_options"]`; Cohere's compatibility API refuses it too). The client never
 * sent it, so the attempt goes again with the client's own body instead of failing every
 * streamed chat on such an upstream.
 */
export function refusesStreamOptions(status: number, body: Buffer): boolean {
  return (status === 400 || status === 422) && body.includes('stream_options');
}
