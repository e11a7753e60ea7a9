import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
// The schema PUT /api/settings validates with: a stored setting obeys the same rules however it
// got into the file. Only the JSON is shared; src/http's SchemaValidator answers with ApiError,
// an HTTP refusal the store layer does not depend on, so the same ajv options are set here.
import settingsSchema from '../../management/schemas/settings.json' with { type: 'json' };

// ajv-formats is CommonJS; under NodeNext its default import is the plugin at run time.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

let compiled: ValidateFunction | undefined;

function check(): ValidateFunction {
  if (compiled === undefined) {
    const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
    addFormats(ajv);
    compiled = ajv.compile(settingsSchema);
  }
  return compiled;
}

/**
 * What is wrong with the stored settings object, naming the setting, or undefined when every
 * stored setting is one the API would accept. Absent settings are fine: they take their defaults.
 */
export function storedSettingsProblem(settings: object): string | undefined {
  const validate = check();
  if (validate(settings)) return undefined;
  const error = validate.errors?.[0];
  if (error === undefined) return 'settings are invalid';
  if (error.keyword === 'additionalProperties') {
    return `settings.${String(error.params.additionalProperty)} is not a known setting; remove it`;
  }
  const { name, value } = located(settings, error);
  return `settings.${name} is ${shown(value)}, which ${error.message ?? 'is invalid'}; correct it, or remove it to use the default`;
}

/** The failing setting's dotted name (list items as [i]) and its stored value. */
function located(settings: object, error: ErrorObject): { name: string; value: unknown } {
  let name = '';
  let value: unknown = settings;
  for (const raw of error.instancePath.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    name = /^\d+$/.test(segment) ? `${name}[${segment}]` : name === '' ? segment : `${name}.${segment}`;
    value = (value as Record<string, unknown>)[segment];
  }
  return { name, value };
}

const SHOWN_CHARS = 80;

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}...` : text;
}
