import { DataPlaneError } from '../data-plane-error.ts';

/**
 * The longest model name a request may give, in UTF-8 bytes, wherever it gives it (a JSON
 * body's model or nested model member, a form's model field, the path, the query): no real
 * name comes near it, and nothing longer is routed, logged or quoted back.
 */
export const MODEL_FIELD_BYTES = 1024;

/** Whether a model name is within MODEL_FIELD_BYTES of UTF-8. */
export function withinModelCap(model: string): boolean {
  // A UTF-16 unit is at most 3 UTF-8 bytes: a name of up to a third of the cap in units, every real one, costs one comparison.
  return model.length <= MODEL_FIELD_BYTES / 3 || Buffer.byteLength(model) <= MODEL_FIELD_BYTES;
}

/** The model a request names, refused (400 `invalid_request_body`) past MODEL_FIELD_BYTES of UTF-8. */
export function cappedModelName(model: string): string {
  if (!withinModelCap(model)) throw modelNameTooLong();
  return model;
}

export function modelNameTooLong(): DataPlaneError {
  return new DataPlaneError('invalid_request_body', `The model name is longer than ${MODEL_FIELD_BYTES} bytes.`);
}
