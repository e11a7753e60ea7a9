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

/** Where a request names its model, and the refusal's code for a name past the cap there. */
const TOO_LONG_CODE = { body: 'invalid_request_body', path: 'invalid_path_parameter', query: 'invalid_query_parameter' } as const;

/** The model a request names, refused (400, the code of where it was named) past MODEL_FIELD_BYTES of UTF-8. */
export function cappedModelName(model: string, from: keyof typeof TOO_LONG_CODE = 'body'): string {
  if (!withinModelCap(model)) throw modelNameTooLong(from);
  return model;
}

export function modelNameTooLong(from: keyof typeof TOO_LONG_CODE = 'body'): DataPlaneError {
  return new DataPlaneError(TOO_LONG_CODE[from], `The model name is longer than ${MODEL_FIELD_BYTES} bytes.`);
}
