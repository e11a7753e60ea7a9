import { isObject } from './error-body-member.ts';
import { googleModelResource } from './google-model-resource.ts';

/** Where a Live setup's model path keeps the model's own name: after its last `models/` (`models/{model}`, Vertex's `publishers/google/models/{model}`). */
const MODELS_SEGMENT = 'models/';

/**
 * The client's first message of an x-live session with its setup's `model` made `upstreamModel`,
 * or undefined when it names none (not JSON, no `setup.model` string): the message is passed as
 * sent. The session was authorized, routed and priced for the `model` query parameter, and an
 * upstream that reads the model from the setup, as Gemini Live does, must neither get the
 * client's name for it nor serve another model the setup names. The path up to the last
 * `models/` is kept, and an upstream model given as `models/{id}` puts its id after it (never
 * `models/models/…`). Only the first message is read: Gemini Live takes its setup there alone.
 */
export function withSetupModel(message: Buffer, upstreamModel: string): Buffer | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(parsed) || !isObject(parsed.setup) || typeof parsed.setup.model !== 'string') return undefined;
  const named = parsed.setup.model;
  const at = named.lastIndexOf(MODELS_SEGMENT);
  const resource = googleModelResource(upstreamModel);
  // A model of another collection (`tunedModels/t`) is named whole, never under the client's `models/`.
  const model = at === -1 || (resource !== undefined && resource.collection !== MODELS_SEGMENT) ? upstreamModel : named.slice(0, at + MODELS_SEGMENT.length) + (resource?.id ?? upstreamModel);
  if (model === named) return undefined;
  parsed.setup.model = model;
  return Buffer.from(JSON.stringify(parsed));
}
