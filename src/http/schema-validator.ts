import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError } from './api-error.ts';
import { joinField, pointerToField } from './pointer-to-field.ts';

// ajv-formats is CommonJS; under NodeNext its default import is the plugin at run time.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * Value sets that come from the generated manifest tables (protocol ids, channel ids, ...).
 * Schemas name a set with the keyword `x-known`, so the JSON files stay static data.
 */
export type KnownValueSets = Readonly<Record<string, () => readonly string[]>>;

export type Validator<T> = (value: unknown) => T;

export class SchemaValidator {
  readonly #ajv: Ajv;

  constructor(known: KnownValueSets) {
    this.#ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
    addFormats(this.#ajv);
    this.#ajv.addKeyword({
      keyword: 'x-known',
      type: 'string',
      schemaType: 'string',
      error: { message: (cxt) => `must be a known ${String(cxt.schema)}` },
      validate: (setName: string, data: string) => {
        const values = known[setName];
        if (!values) throw new Error(`schema names unknown value set ${setName}`);
        return values().includes(data);
      },
    });
  }

  compile<T>(schema: object): Validator<T> {
    const check = this.#ajv.compile(schema) as ValidateFunction<T>;
    return (value: unknown): T => {
      if (check(value)) return value;
      throw toValidationError(check.errors?.[0]);
    };
  }
}

/** The first failing rule becomes VALIDATION_FAILED whose data names the field. */
function toValidationError(error: ErrorObject | undefined): ApiError {
  if (!error) return new ApiError('VALIDATION_FAILED', { data: { field: '', reason: 'invalid' } });
  const base = pointerToField(error.instancePath);
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return new ApiError('VALIDATION_FAILED', { data: { field: joinField(base, String(p.additionalProperty)), reason: 'unknown_field' } });
    case 'required':
      return new ApiError('VALIDATION_FAILED', { data: { field: joinField(base, String(p.missingProperty)), reason: 'required' } });
    case 'type':
      return new ApiError('VALIDATION_FAILED', { data: { field: base, reason: 'wrong_type', expected: p.type } });
    default:
      return new ApiError('VALIDATION_FAILED', { data: { field: base, reason: 'invalid_value', rule: error.keyword, detail: error.message } });
  }
}
