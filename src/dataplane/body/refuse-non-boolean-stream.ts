import { DataPlaneError } from '../data-plane-error.ts';

/**
 * Refuses a JSON body whose top-level `stream` is neither a boolean nor null, as OpenAI does.
 * A lenient compatible upstream (pydantic's lax mode: vLLM, SGLang, LiteLLM) streams on `"true"`
 * or `1`, which the gateway would not read as a stream: it would ask for no usage, and the
 * record and token quotas would see none. A form's fields are strings and are not checked.
 */
export function refuseNonBooleanStream(body: Record<string, unknown>): void {
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw new DataPlaneError('invalid_request_body', 'The top-level "stream" member must be a boolean.');
}
