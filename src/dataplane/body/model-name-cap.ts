import { DataPlaneError } from '../data-plane-error.ts';
import { MODEL_FIELD_BYTES } from './multipart-model-scanner.ts';

const ELLIPSIS_BYTES = Buffer.byteLength('…');

/**
 * The model a request names, refused (400 `invalid_request_body`) past MODEL_FIELD_BYTES of
 * UTF-8, the cap a form's model field has: wherever it is given (a JSON body, the path, the
 * query), no longer name is routed, logged or quoted back.
 */
export function cappedModelName(model: string): string {
  // A UTF-16 unit is at most 3 UTF-8 bytes: a name of up to a third of the cap in units, every real one, costs one comparison.
  if (model.length > MODEL_FIELD_BYTES / 3 && Buffer.byteLength(model) > MODEL_FIELD_BYTES) throw modelNameTooLong();
  return model;
}

export function modelNameTooLong(): DataPlaneError {
  return new DataPlaneError('invalid_request_body', `The model name is longer than ${MODEL_FIELD_BYTES} bytes.`);
}

/** A model for a message: past the cap, as much of its start as fits in the cap with an ellipsis (whole characters only). */
export function quotableModel(model: string): string {
  if (model.length <= MODEL_FIELD_BYTES / 3 || Buffer.byteLength(model) <= MODEL_FIELD_BYTES) return model;
  // Streaming decode holds back a character the cut splits, instead of a replacement character.
  return `${new TextDecoder().decode(Buffer.from(model).subarray(0, MODEL_FIELD_BYTES - ELLIPSIS_BYTES), { stream: true })}…`;
}
