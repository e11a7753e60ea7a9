import { LOCATION_FIELDS } from '../credential-location.ts';
import { CHANNEL_IDS, CREDENTIAL_KIND_IDS, PROTOCOL_IDS } from '../../generated/index.ts';
import { ApiError } from '../../http/api-error.ts';
import { SchemaValidator, type Validator } from '../../http/schema-validator.ts';
import { channelRequiresBaseUrl, checkProxyAllowed, kindOfChannel } from '../../management/channel-rules.ts';
import { checkBaseUrl } from '../../management/check-base-url.ts';
// The schemas the management API validates these fields with: a stored record obeys the same
// rules however it got into the file (a hand edit would otherwise fail requests, not the start).
import accessKeyCreateSchema from '../../management/schemas/access-key-create.json' with { type: 'json' };
import credentialStageCreateSchema from '../../management/schemas/credential-stage-create.json' with { type: 'json' };
import credentialUpdateSchema from '../../management/schemas/credential-update.json' with { type: 'json' };
import groupCreateSchema from '../../management/schemas/group-create.json' with { type: 'json' };
import modelPriceSchema from '../../management/schemas/model-price.json' with { type: 'json' };
import priceListSchema from '../../management/schemas/price-list.json' with { type: 'json' };
import type { CredentialStageState, PriceSource } from '../records.ts';
import { OPTIONAL_PRICE_RATES } from './optional-price-rates.ts';

type Schema = Record<string, unknown>;

// Fields only the store writes (ids, times, state, sealed secrets): their rules, in one place.
const ID: Schema = { type: 'integer', minimum: 1 };
const TIME: Schema = { type: 'string', format: 'date-time' };
const TIME_OR_NULL: Schema = { type: ['string', 'null'], format: 'date-time' };
const COUNT: Schema = { type: 'integer', minimum: 0 };
const TEXT: Schema = { type: 'string', minLength: 1 };
const TEXT_OR_NULL: Schema = { type: ['string', 'null'] };
const STRINGS: Schema = { type: 'object', additionalProperties: { type: 'string' } };
const STAGE_STATES = ['awaiting_authorization', 'authorized', 'imported', 'failed', 'expired', 'cancelled'] satisfies CredentialStageState[];
const PRICE_SOURCES = ['catalog', 'sync', 'manual'] satisfies PriceSource[];
const STAMPS = { created_at: TIME, updated_at: TIME };

/**
 * A stored record: the API input's properties, each present as the store always writes it,
 * plus the stored-only ones. `optional` are those rows written by earlier versions lack.
 */
function stored(inputProperties: Record<string, Schema>, own: Record<string, Schema>, optional: readonly string[] = []): Schema {
  const properties = { ...inputProperties, ...own };
  return { type: 'object', additionalProperties: false, required: Object.keys(properties).filter((name) => !optional.includes(name)), properties };
}

const groupInput = groupCreateSchema.properties;
const GROUP = stored(
  { ...groupInput, models: { ...groupInput.models, items: { ...groupInput.models.items, required: ['external', 'upstream'] } } },
  { id: ID, ...STAMPS },
  // Rows stored before it existed (read as false, groups.ts).
  ['versionless_api'],
);

const CREDENTIAL = stored(
  credentialUpdateSchema.properties,
  {
    id: ID,
    group_id: credentialStageCreateSchema.properties.group_id,
    kind: credentialStageCreateSchema.properties.kind,
    masked: STRINGS,
    enabled: { type: 'boolean' },
    disabled_reason: TEXT_OR_NULL,
    disabled_by: { enum: ['upstream', 'operator'] },
    cooldown_until: TIME_OR_NULL,
    reset_credits_consumed: COUNT,
    revision: COUNT,
    sealed: TEXT,
    fingerprint: TEXT,
    ...STAMPS,
  },
  // Rows stored before weights, revisions and disabled_by existed (see credentials.ts).
  ['weight', 'revision', 'disabled_by'],
);

const ACCESS_KEY = stored(accessKeyCreateSchema.properties, { id: ID, masked: TEXT, rotated_at: TIME_OR_NULL, sealed: TEXT, value_index: TEXT, ...STAMPS });

const MODEL_PRICE = stored(
  modelPriceSchema.properties,
  { model: priceListSchema.properties.prices.items.properties.model, source: { enum: PRICE_SOURCES }, updated_at: TIME },
  OPTIONAL_PRICE_RATES,
);

const CREDENTIAL_STAGE = stored(credentialStageCreateSchema.properties, {
  id: ID,
  flow: TEXT,
  state: { enum: STAGE_STATES },
  authorization: { ...STRINGS, type: ['object', 'null'] },
  error: TEXT_OR_NULL,
  credential_id: { type: ['integer', 'null'], minimum: 1 },
  expires_at: TIME,
  ...STAMPS,
});

const JOURNAL_NOTE = stored({}, { key: TEXT, at: COUNT });

interface Checks {
  group: Validator<CheckedGroup>;
  credential: Validator<CheckedCredential>;
  accessKey: Validator<CheckedAccessKey>;
  modelPrice: Validator<{ model: string }>;
  stage: Validator<CheckedStage>;
  journalNote: Validator<unknown>;
}

/** The fields of a record the schema passed that the rules after it read. */
interface CheckedGroup {
  id: number;
  channel: string;
  base_url: string | null;
  proxy_url: string | null;
  models: Array<{ external: string }>;
}
interface CheckedCredential {
  id: number;
  group_id: number;
  kind: string;
  fields: Record<string, string>;
  masked: Record<string, string>;
  proxy_url: string | null;
}
interface CheckedAccessKey {
  id: number;
  groups: number[] | null;
}
interface CheckedStage {
  id: number;
  group_id: number;
  kind: string;
}

let compiled: Checks | undefined;

function checks(): Checks {
  if (compiled === undefined) {
    // The API's validator, with the value sets the server gives it.
    const validator = new SchemaValidator({ protocol_id: () => PROTOCOL_IDS, channel_id: () => CHANNEL_IDS, credential_kind_id: () => CREDENTIAL_KIND_IDS });
    compiled = {
      group: validator.compile(GROUP),
      credential: validator.compile(CREDENTIAL),
      accessKey: validator.compile(ACCESS_KEY),
      modelPrice: validator.compile(MODEL_PRICE),
      stage: validator.compile(CREDENTIAL_STAGE),
      journalNote: validator.compile(JOURNAL_NOTE),
    };
  }
  return compiled;
}

/** The lists of a config.json whose top level is already checked. */
export interface ConfigLists {
  next_id: Record<'group' | 'credential' | 'access_key' | 'credential_stage', number>;
  groups: unknown[];
  credentials: unknown[];
  access_keys: unknown[];
  model_prices: unknown[];
  credential_stages: unknown[];
  idempotency_journal?: unknown[];
}

/**
 * What is wrong with the first stored record the management API would not have written, as
 * `groups[0].models: required`, or undefined when every record is one it would accept.
 */
export function configRecordsProblem(d: ConfigLists): string | undefined {
  try {
    checkRecords(d);
    return undefined;
  } catch (err) {
    if (err instanceof RecordProblem) return err.message;
    throw err;
  }
}

class RecordProblem extends Error {}

function checkRecords(d: ConfigLists): void {
  const c = checks();
  const groups = new Map<number, CheckedGroup>();
  eachRecord(d.groups, 'groups', c.group, d.next_id.group, (g, at) => {
    groups.set(g.id, g);
    within(at, () => {
      if (g.base_url === null && channelRequiresBaseUrl(g.channel)) throw problem('base_url', 'required by the channel');
      if (g.base_url !== null) checkBaseUrl(g.base_url, 'base_url');
      checkProxyAllowed(g.channel, g.proxy_url);
    });
    const externals = new Set<string>();
    g.models.forEach((m, i) => {
      if (externals.has(m.external)) throw problem(`${at}.models[${i}].external`, `duplicate of another model of the group`);
      externals.add(m.external);
    });
  });
  const groupOf = (id: number, field: string): CheckedGroup => {
    const g = groups.get(id);
    if (g === undefined) throw problem(field, `names no stored group (${id})`);
    return g;
  };
  eachRecord(d.credentials, 'credentials', c.credential, d.next_id.credential, (cred, at) => {
    const group = groupOf(cred.group_id, `${at}.group_id`);
    within(at, () => {
      const kind = kindOfChannel(group.channel, cred.kind);
      const known = kind.fields.map((f) => f.name);
      for (const [name, value] of [...Object.entries(cred.fields), ...Object.entries(cred.masked)]) {
        if (!known.includes(name)) throw problem(`fields.${name}`, `not a field of kind ${cred.kind}`);
        if (LOCATION_FIELDS.includes(name) && value !== '' && Object.hasOwn(cred.fields, name)) checkBaseUrl(value, `fields.${name}`);
      }
      checkProxyAllowed(group.channel, cred.proxy_url);
    });
  });
  eachRecord(d.access_keys, 'access_keys', c.accessKey, d.next_id.access_key, (key, at) => {
    key.groups?.forEach((id, i) => groupOf(id, `${at}.groups[${i}]`));
  });
  eachRecord(d.credential_stages, 'credential_stages', c.stage, d.next_id.credential_stage, (stage, at) => {
    const group = groupOf(stage.group_id, `${at}.group_id`);
    within(at, () => kindOfChannel(group.channel, stage.kind));
  });
  const models = new Set<string>();
  d.model_prices.forEach((record, i) => {
    const { model } = validated(c.modelPrice, record, `model_prices[${i}]`);
    if (models.has(model)) throw problem(`model_prices[${i}].model`, 'duplicate of another price');
    models.add(model);
  });
  d.idempotency_journal?.forEach((note, i) => validated(c.journalNote, note, `idempotency_journal[${i}]`));
}

/** Validates each record of `list` and its id (unique, below the next one to be given), then runs `more`. */
function eachRecord<T extends { id: number }>(list: unknown[], name: string, validate: Validator<T>, nextId: number, more: (record: T, at: string) => void): void {
  const ids = new Set<number>();
  list.forEach((item, i) => {
    const at = `${name}[${i}]`;
    const record = validated(validate, item, at);
    if (ids.has(record.id)) throw problem(`${at}.id`, 'duplicate of another record');
    if (record.id >= nextId) throw problem(`${at}.id`, `not below next_id (${nextId}), so a new record would reuse it`);
    ids.add(record.id);
    more(record, at);
  });
}

function validated<T>(validate: Validator<T>, value: unknown, at: string): T {
  return within(at, () => validate(value));
}

/** Runs an API check on the record at `at`, its refusal turned into the record's problem. */
function within<T>(at: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof RecordProblem) throw problem(`${at}.${err.message}`);
    if (!(err instanceof ApiError) || err.code !== 'VALIDATION_FAILED') throw err;
    const data = err.data as { field: string; reason: string; expected?: unknown; detail?: unknown };
    throw problem(data.field === '' ? at : `${at}.${data.field}`, refusal(data));
  }
}

function refusal(data: { reason: string; expected?: unknown; detail?: unknown }): string {
  if (data.reason === 'required') return 'required';
  if (data.reason === 'unknown_field') return 'not a known field; remove it';
  if (data.reason === 'wrong_type') return `must be ${String(data.expected)}`;
  // A detail is the whole sentence (a proxy's, a base URL's); a bare reason is a word id.
  return typeof data.detail === 'string' ? data.detail : data.reason.replaceAll('_', ' ');
}

function problem(field: string, what?: string): RecordProblem {
  return new RecordProblem(what === undefined ? field : `${field}: ${what}`);
}
