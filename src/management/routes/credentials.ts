import { duplicateCredential, notFound, validationFailed } from '../../http/api-error.ts';
import type { CredentialConnectBody } from '../../generated/management/credential-connect.ts';
import type { CredentialDisableBody } from '../../generated/management/credential-disable.ts';
import type { CredentialImportBody } from '../../generated/management/credential-import.ts';
import type { CredentialUpdateBody } from '../../generated/management/credential-update.ts';
import { maskSecret } from '../../store/mask.ts';
import { recordReveal } from '../audit-reveal.ts';
import { checkProxyAllowed, completeCredentialValues, importableKind, importSecretField, kindOfChannel, secretFieldsOf, updatedCredentialValues } from '../channel-rules.ts';
import type { ManagementContext, ManagementDeps } from '../context.ts';
import { importLineValues } from '../credential-import-line.ts';
import { duplicateCredentialAsConflict } from '../duplicate-credential-as-conflict.ts';
import { whenGroupGone } from '../when-group-gone.ts';
import { idParam, queryEnum } from '../params.ts';
import { requireGroupInPath } from '../require-group.ts';
import { route, type RouteDef } from '../route-def.ts';
import connectSchema from '../schemas/credential-connect.json' with { type: 'json' };
import disableSchema from '../schemas/credential-disable.json' with { type: 'json' };
import importSchema from '../schemas/credential-import.json' with { type: 'json' };
import updateSchema from '../schemas/credential-update.json' with { type: 'json' };

const BASE = '/groups/:group_id/credentials';
/** A batch import may carry thousands of keys. */
const IMPORT_BODY_LIMIT = 8 * 1024 * 1024;

export function credentialRoutes(deps: ManagementDeps): RouteDef[] {
  const { store } = deps;

  function credentialId(ctx: ManagementContext): number {
    return idParam(ctx, 'credential_id', 'credential');
  }

  return [
    route({
      method: 'GET',
      path: BASE,
      async handle(ctx) {
        return { data: await store.credentials.list((await requireGroupInPath(ctx, store.groups)).id) };
      },
    }),
    route<CredentialImportBody>({
      method: 'POST',
      path: `${BASE}/import`,
      body: importSchema,
      bodyLimit: IMPORT_BODY_LIMIT,
      idempotent: true,
      async handle(ctx, body) {
        const group = await requireGroupInPath(ctx, store.groups);
        checkProxyAllowed(group.channel, body.proxy_url ?? null);
        const common = definedStrings(body.fields ?? {});
        const kind = body.kind === undefined ? importableKind(group.channel, common, group.base_url) : kindOfChannel(group.channel, body.kind);
        const secretField = kind && importSecretField(kind, common, group.base_url);
        if (!kind || !secretField) throw validationFailed('kind', 'not_importable', { hint: 'use credentials/connect for this kind' });
        if (common[secretField] !== undefined) throw validationFailed(`fields.${secretField}`, 'secret_in_common_fields');
        const lines = body.credentials
          .split(/\r?\n/)
          .map((l) => l.trim())
          .filter((l) => l !== '' && !l.startsWith('#'));
        if (lines.length === 0) throw validationFailed('credentials', 'empty');
        const items = lines.map((line, i) => ({
          kind: kind.id,
          values: importLineValues(kind, secretField, line, i + 1, common, group),
          secretFields: secretFieldsOf(kind),
          proxy_url: body.proxy_url ?? null,
        }));
        const outcomes = await whenGroupGone(store.credentials.createMany(group.id, items), (id) => notFound('group', id));
        const created: Array<{ line: number; id: number; masked: string }> = [];
        const duplicates: Array<{ line: number; masked: string; duplicate_of: number }> = [];
        outcomes.forEach((o, i) => {
          const masked = maskSecret(items[i]?.values[secretField] ?? '');
          if ('created' in o) created.push({ line: i + 1, id: o.created.id, masked });
          else duplicates.push({ line: i + 1, masked, duplicate_of: o.duplicate_of });
        });
        return { data: { kind: kind.id, total: lines.length, created, duplicates } };
      },
    }),
    route<CredentialConnectBody>({
      method: 'POST',
      path: `${BASE}/connect`,
      body: connectSchema,
      idempotent: true,
      async handle(ctx, body) {
        const group = await requireGroupInPath(ctx, store.groups);
        checkProxyAllowed(group.channel, body.proxy_url ?? null);
        const kind = kindOfChannel(group.channel, body.kind);
        const values = completeCredentialValues(kind, definedStrings(body.fields), group);
        const [outcome] = await whenGroupGone(
          store.credentials.createMany(group.id, [
          { kind: kind.id, name: body.name ?? null, values, secretFields: secretFieldsOf(kind), proxy_url: body.proxy_url ?? null, ...(body.weight !== undefined ? { weight: body.weight } : {}) },
        ]),
          (id) => notFound('group', id),
        );
        if (!outcome || !('created' in outcome)) throw duplicateCredential(outcome?.duplicate_of);
        return { status: 201, data: outcome.created };
      },
    }),
    route({
      method: 'GET',
      path: `${BASE}/download`,
      query: ['format'],
      async handle(ctx) {
        const format = queryEnum(ctx, 'format', ['text', 'json'] as const) ?? 'text';
        const group = await requireGroupInPath(ctx, store.groups);
        const list = await store.credentials.list(group.id);
        await recordReveal(deps, ctx, 'credential.download', { group_id: group.id, credential_ids: list.map((c) => c.id) });
        // All in one pass: one reveal per credential looked each up among all (quadratic).
        const values = await store.credentials.revealAll(group.id);
        const revealed = list.map((c) => ({ id: c.id, kind: c.kind, name: c.name, fields: values.get(c.id) ?? {} }));
        if (format === 'json') {
          return { file: { contentType: 'application/json', filename: `group-${group.id}-credentials.json`, body: `${JSON.stringify(revealed, null, 2)}\n` } };
        }
        // One secret per line, the format the import reads back; a kind with several fields as one JSON line.
        const lines = revealed.map((c) => {
          const secrets = secretFieldsOf(kindOfChannel(group.channel, c.kind)).filter((name) => c.fields[name] !== undefined);
          return secrets.length === 1 && Object.keys(c.fields).length === 1 ? (c.fields[secrets[0] as string] ?? '') : JSON.stringify(c.fields);
        });
        return { file: { contentType: 'text/plain', filename: `group-${group.id}-credentials.txt`, body: lines.map((l) => `${l}\n`).join('') } };
      },
    }),
    route({
      method: 'GET',
      path: `${BASE}/:credential_id`,
      async handle(ctx) {
        const group = await requireGroupInPath(ctx, store.groups);
        const c = await store.credentials.get(group.id, credentialId(ctx));
        if (!c) throw notFound('credential', credentialId(ctx));
        return { data: c };
      },
    }),
    route<CredentialUpdateBody>({
      method: 'PATCH',
      path: `${BASE}/:credential_id`,
      body: updateSchema,
      async handle(ctx, body) {
        const group = await requireGroupInPath(ctx, store.groups);
        const current = await store.credentials.get(group.id, credentialId(ctx));
        if (!current) throw notFound('credential', credentialId(ctx));
        checkProxyAllowed(group.channel, body.proxy_url ?? null);
        const kind = kindOfChannel(group.channel, current.kind);
        const patch = {
          name: body.name,
          proxy_url: body.proxy_url,
          weight: body.weight,
          ...(body.fields === undefined ? {} : { ...updatedCredentialValues(kind, definedStrings(body.fields), current.fields), secretFields: secretFieldsOf(kind) }),
        };
        const saved = await duplicateCredentialAsConflict(store.credentials.update(group.id, current.id, patch));
        if (!saved) throw notFound('credential', current.id);
        return { data: saved };
      },
    }),
    route({
      method: 'POST',
      path: `${BASE}/:credential_id/enable`,
      async handle(ctx) {
        const group = await requireGroupInPath(ctx, store.groups);
        const saved = await store.credentials.setState(group.id, credentialId(ctx), { to: 'active' });
        if (!saved) throw notFound('credential', credentialId(ctx));
        return { data: saved };
      },
    }),
    route<CredentialDisableBody>({
      method: 'POST',
      path: `${BASE}/:credential_id/disable`,
      body: disableSchema,
      async handle(ctx, body) {
        const group = await requireGroupInPath(ctx, store.groups);
        const saved = await store.credentials.setState(group.id, credentialId(ctx), { to: 'disabled', reason: body.reason ?? 'disabled_by_operator' });
        if (!saved) throw notFound('credential', credentialId(ctx));
        return { data: saved };
      },
    }),
    route({
      method: 'POST',
      path: `${BASE}/:credential_id/reveal`,
      async handle(ctx) {
        const group = await requireGroupInPath(ctx, store.groups);
        const id = credentialId(ctx);
        if (!(await store.credentials.get(group.id, id))) throw notFound('credential', id);
        await recordReveal(deps, ctx, 'credential.reveal', { group_id: group.id, credential_ids: [id] });
        return { data: { id, fields: await store.credentials.reveal(group.id, id) } };
      },
    }),
    route({
      method: 'POST',
      path: `${BASE}/:credential_id/reset-credits/consume`,
      idempotent: true,
      async handle(ctx) {
        const group = await requireGroupInPath(ctx, store.groups);
        const saved = await store.credentials.consumeResetCredit(group.id, credentialId(ctx));
        if (!saved) throw notFound('credential', credentialId(ctx));
        return { data: saved };
      },
    }),
    route({
      method: 'DELETE',
      path: `${BASE}/:credential_id`,
      async handle(ctx) {
        const group = await requireGroupInPath(ctx, store.groups);
        if (!(await store.credentials.delete(group.id, credentialId(ctx)))) throw notFound('credential', credentialId(ctx));
        return {};
      },
    }),
  ];
}

/** JSON objects typed with an index signature may declare undefined values; bodies never carry them. */
function definedStrings(values: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined));
}
