import { validateHeaderValue } from 'node:http';
import { LOCATION_FIELDS } from '../store/credential-location.ts';
import { validationFailed } from '../http/api-error.ts';
import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindDecl, type CredentialKindId } from '../generated/index.ts';
import type { GroupRecord } from '../store/records.ts';
import { SUPPORTED_PROXY_SCHEMES, proxyUrlProblem } from '../upstream/index.ts';
import { checkBaseUrl } from './check-base-url.ts';
import credentialUpdateSchema from './schemas/credential-update.json' with { type: 'json' };

export function channelOf(id: string) {
  const channel = Object.hasOwn(CHANNELS, id) ? CHANNELS[id as ChannelId] : undefined;
  if (!channel) throw validationFailed('channel', 'unknown_channel');
  return channel;
}

export function kindsOfChannel(channel: string): CredentialKindDecl[] {
  return channelOf(channel).credential_kinds.map((k) => CREDENTIAL_KINDS[k]);
}

/** ch31-ch35: every credential kind of the channel needs the upstream's location. */
export function channelRequiresBaseUrl(channel: string): boolean {
  return kindsOfChannel(channel).every((k) => k.fields.some((f) => f.required && LOCATION_FIELDS.includes(f.name)));
}

export function kindOfChannel(channel: string, kind: string, field = 'kind'): CredentialKindDecl {
  const allowed = channelOf(channel).credential_kinds as readonly string[];
  if (!allowed.includes(kind)) throw validationFailed(field, 'kind_not_of_channel', { allowed });
  return CREDENTIAL_KINDS[kind as CredentialKindId];
}

export function secretFieldsOf(kind: CredentialKindDecl): string[] {
  return kind.fields.filter((f) => f.secret).map((f) => f.name);
}

/** The kind a plain list of keys is imported as: one required secret, everything else fillable. */
export function importableKind(channel: string, commonFields: Record<string, string>, baseUrl: string | null): CredentialKindDecl | undefined {
  return kindsOfChannel(channel).find((k) => importSecretField(k, commonFields, baseUrl) !== undefined);
}

export function importSecretField(kind: CredentialKindDecl, commonFields: Record<string, string>, baseUrl: string | null): string | undefined {
  const requiredSecrets = kind.fields.filter((f) => f.required && f.secret);
  const [only] = requiredSecrets;
  if (requiredSecrets.length !== 1 || !only) return undefined;
  const fillable = kind.fields.every((f) => !f.required || f.secret || commonFields[f.name] !== undefined || (baseUrl !== null && LOCATION_FIELDS.includes(f.name)));
  return fillable ? only.name : undefined;
}

/**
 * Checks submitted values for a credential being created against the kind's fields: no unknown
 * names, every required one present and non-empty (a location field may come from the Group's
 * base_url), URLs valid, and a static kind's secret one an HTTP header can carry.
 */
export function completeCredentialValues(kind: CredentialKindDecl, values: Record<string, string>, group: GroupRecord, fieldPrefix = 'fields'): Record<string, string> {
  return checkedCredentialValues(kind, values, group.base_url, fieldPrefix);
}

/**
 * The same checks for a PATCH of `fields`, which replaces the values, except that a location
 * not given keeps the credential's own: the Group's base_url fills it only at creation, so a
 * key rotation never moves a credential to the Group's upstream. The kept location is not in
 * the values returned but named in keepWhenOmitted, for the store to take in its write: by then
 * a concurrent PATCH may have moved it. `current` only lets a required location pass the check
 * (a PATCH never removes a stored one).
 */
export function updatedCredentialValues(
  kind: CredentialKindDecl,
  values: Record<string, string>,
  current: Readonly<Record<string, string>>,
): { values: Record<string, string>; keepWhenOmitted: string[] } {
  const location = kind.fields.find((f) => LOCATION_FIELDS.includes(f.name));
  const checked = checkedCredentialValues(kind, values, (location && current[location.name]) || null, 'fields');
  if (!location) return { values: checked, keepWhenOmitted: [] };
  const submitted = values[location.name] !== undefined && values[location.name] !== '';
  return { values: submitted ? checked : withoutField(checked, location.name), keepWhenOmitted: [location.name] };
}

function withoutField(values: Record<string, string>, name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter(([k]) => k !== name));
}

/** The longest credential field value: the credential schemas' `fields` limit, read from one of them. */
const MAX_FIELD_CHARS = credentialUpdateSchema.properties.fields.additionalProperties.maxLength;

/** Spaces and tabs at either end: what HTTP strips from a header value. */
const SURROUNDING_BLANKS = /^[ \t]+|[ \t]+$/g;

function checkedCredentialValues(kind: CredentialKindDecl, values: Record<string, string>, locationDefault: string | null, fieldPrefix: string): Record<string, string> {
  const known = kind.fields.map((f) => f.name);
  for (const name of Object.keys(values)) {
    if (!known.includes(name)) throw validationFailed(`${fieldPrefix}.${name}`, 'unknown_field', { allowed: known });
  }
  const out: Record<string, string> = {};
  for (const f of kind.fields) {
    let v = values[f.name];
    // A header value's surrounding spaces and tabs never reach the upstream (RFC 9110 §5.5), so the stored secret, which the answers are masked by, is what it reads.
    if (v !== undefined && f.secret && kind.flow === 'static') v = v.replace(SURROUNDING_BLANKS, '');
    if ((v === undefined || v === '') && LOCATION_FIELDS.includes(f.name) && locationDefault !== null) v = locationDefault;
    if (v === undefined || v === '') {
      if (f.required) throw validationFailed(`${fieldPrefix}.${f.name}`, 'required');
      continue;
    }
    // The schemas' limit for a field value, held here too: an import line's values pass no schema.
    if (v.length > MAX_FIELD_CHARS) throw validationFailed(`${fieldPrefix}.${f.name}`, 'invalid_value', { rule: 'maxLength', detail: `must NOT have more than ${MAX_FIELD_CHARS} characters` });
    if (LOCATION_FIELDS.includes(f.name)) checkBaseUrl(v, `${fieldPrefix}.${f.name}`);
    if (f.secret && kind.flow === 'static') checkHeaderValue(v, `${fieldPrefix}.${f.name}`);
    out[f.name] = v;
  }
  return out;
}

/**
 * A static kind's secret is sent as it is in a request header (authorization, x-api-key,
 * x-goog-api-key): one with a character a header cannot carry (a control character, a newline,
 * anything beyond Latin-1 such as a pasted "…") would fail every request, so it is refused here
 * by the rule node's and undici's clients apply.
 */
function checkHeaderValue(value: string, field: string): void {
  try {
    validateHeaderValue('x-credential', value);
  } catch {
    throw validationFailed(field, 'not_a_header_value', { detail: 'holds a character an HTTP header value cannot carry (a control character, a line break, or one beyond Latin-1)' });
  }
}

/** Notes 13-14: a managed proxy applies only where the channel supports one, and only one the gateway can use. */
export function checkProxyAllowed(channel: string, proxyUrl: string | null, field = 'proxy_url'): void {
  const descriptor = channelOf(channel);
  if (proxyUrl !== null && !descriptor.proxy) throw validationFailed(field, 'channel_has_no_managed_proxy', { channel, note: descriptor.no_managed_proxy_note });
  checkProxyUrlUsable(proxyUrl, field);
}

/**
 * A proxy URL is refused here exactly when the upstream client would refuse it at request
 * time (the same check), so no request ever finds a stored proxy it cannot use.
 */
export function checkProxyUrlUsable(proxyUrl: string | null | undefined, field = 'proxy_url'): void {
  const found = proxyUrl == null ? undefined : proxyUrlProblem(proxyUrl);
  if (found) throw validationFailed(field, found.problem, { detail: found.message, supported_schemes: SUPPORTED_PROXY_SCHEMES });
}
