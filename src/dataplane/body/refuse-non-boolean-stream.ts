import { DataPlaneError } from '../data-plane-error.ts';

/**
 * Refuses a JSON body whose top-level `stream` is neither a boolean nor null, as OpenAI does.
 * A lenient compatible upstream (pydantic's lax mode: vLLM, SGLang, LiteLLM) streams on `"true"`
 * or `1`, which the gateway would not read as a stream: it would ask for no usage, and the
 * record and token quotas would see none.
 */
export function refuseNonBooleanStream(body: Record<string, unknown>): void {
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw new DataPlaneError('invalid_request_body', 'The top-level "stream" member must be a boolean.');
}

/**
 * The refusal of a form whose `stream` field is text other than `true` or `false`, which the
 * gateway reads as no stream while a lax upstream (FastAPI's `Form(bool)`: `1`, `True`, `yes`,
 * `on`) streams; undefined for a form without one, or with one of those two.
 */
export function formStreamRefusal(fields: ReadonlyMap<string, string>): DataPlaneError | undefined {
  const stream = fields.get('stream');
  return stream === undefined || stream === 'true' || stream === 'false' ? undefined : new DataPlaneError('invalid_request_body', 'The "stream" field must be true or false.');
}
