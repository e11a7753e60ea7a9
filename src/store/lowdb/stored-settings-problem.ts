import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
// The schema PUT /api/settings validates with: a stored setting obeys the same rules however it
// got into the file. Only the JSON is shared; src/http's SchemaValidator answers with ApiError,
// an HTTP refusal the store layer does not depend on, so the same ajv options are set here.
import settingsSchema from '../../management/schemas/settings.json' with { type: 'json' };
import { isAddressOrCidr } from '../../auth/is-address-or-cidr.ts';
import { pointerSegments, pointerToField } from '../../http/pointer-to-field.ts';
import { proxyUrlProblem } from '../../upstream/index.ts';

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
  if (validate(settings)) return trustedProxiesProblem(settings) ?? proxyUrlSettingProblem(settings);
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
  let value: unknown = settings;
  for (const segment of pointerSegments(error.instancePath)) value = (value as Record<string, unknown>)[segment];
  return { name: pointerToField(error.instancePath), value };
}

const SHOWN_CHARS = 80;

/**
 * A URL's user info in JSON text: from after its scheme's `//` (or the string's start, written
 * without one: `user:pass@host`) to the last `@` of the string. A stored value the schema refuses
 * is one `new URL` may not parse either, and its password is not to reach the console.
 */
const USER_INFO = /"([a-zA-Z][\w+.-]*:\/\/)?(?:[^"\\]|\\.)*@/g;

function shown(value: unknown): string {
  const text = (JSON.stringify(value) ?? String(value)).replace(USER_INFO, '"$1***@');
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}...` : text;
}

/** The rule the API adds to the schema: each trusted proxy an address or CIDR (a bad one made lockout's peer lookup throw). */
function trustedProxiesProblem(settings: object): string | undefined {
  const entries = (settings as { trusted_proxies?: unknown }).trusted_proxies;
  if (!Array.isArray(entries)) return undefined;
  const at = entries.findIndex((entry) => typeof entry !== 'string' || !isAddressOrCidr(entry));
  if (at < 0) return undefined;
  return `settings.trusted_proxies[${at}] is ${shown(entries[at])}, which is not an IP address or CIDR; correct it, or remove it`;
}

/**
 * The rule the API adds for the global proxy, as for a Group's or a credential's: one the upstream
 * client can use (the schema takes any URI, `socks4://` included). The message names no password.
 */
function proxyUrlSettingProblem(settings: object): string | undefined {
  const proxy = (settings as { proxy_url?: unknown }).proxy_url;
  const found = typeof proxy === 'string' ? proxyUrlProblem(proxy) : undefined;
  return found === undefined ? undefined : `settings.proxy_url: ${found.message}; correct it, or remove it to connect directly`;
}
