import { CREDENTIAL_KINDS } from '../generated/index.ts';

/**
 * Fields of a credential kind that say where its upstream is (spec section 5.7: "AccessKey +
 * base URL", "API key + base URL", "API key + custom endpoint"). The same names the management
 * plane fills from the Group's base_url when a credential is created without one.
 */
export const LOCATION_FIELDS: readonly string[] = ['base_url', 'endpoint'];

/** Each credential kind's location field, for the kinds that declare one. */
const LOCATION_FIELD_BY_KIND: ReadonlyMap<string, string> = new Map(
  Object.values(CREDENTIAL_KINDS).flatMap((kind) => {
    const field = kind.fields.find((f) => LOCATION_FIELDS.includes(f.name));
    return field === undefined ? [] : [[kind.id, field.name] as const];
  }),
);

/**
 * The upstream address a credential's own values name, or null when its kind has no location
 * field or the value is empty: its requests then go to the Group's base_url.
 */
export function credentialLocation(kind: string, values: Readonly<Record<string, string>>): string | null {
  const field = LOCATION_FIELD_BY_KIND.get(kind);
  const value = field === undefined ? undefined : values[field];
  return value === undefined || value === '' ? null : value;
}
