import { storedExpiry } from '../../auth/access-key-expiry.ts';
import { notFound, validationFailed } from '../../http/api-error.ts';
import type { AccessKeyCreateBody } from '../../generated/management/access-key-create.ts';
import type { AccessKeyUpdateBody } from '../../generated/management/access-key-update.ts';
import type { ConfigStore } from '../../store/config-store.ts';
import { whenGroupGone } from '../when-group-gone.ts';
import { recordReveal } from '../audit-reveal.ts';
import type { ManagementContext, ManagementDeps } from '../context.ts';
import { idParam } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';
import createSchema from '../schemas/access-key-create.json' with { type: 'json' };
import updateSchema from '../schemas/access-key-update.json' with { type: 'json' };

export function accessKeyRoutes(deps: ManagementDeps): RouteDef[] {
  const { store } = deps;
  const keyId = (ctx: ManagementContext) => idParam(ctx, 'id', 'access_key');

  return [
    route({
      method: 'GET',
      path: '/access-keys',
      async handle() {
        return { data: await store.accessKeys.list() };
      },
    }),
    route<AccessKeyCreateBody>({
      method: 'POST',
      path: '/access-keys',
      body: createSchema,
      idempotent: true,
      async handle(_ctx, sent) {
        const body = withStoredExpiry(sent);
        await checkGroups(store, body.groups);
        const { record, value } = await whenGroupGone(store.accessKeys.create(body), unknownGroup(body.groups));
        // The value is shown in this response only; a replay shows the key without it.
        return { status: 201, data: { ...record, value }, replayData: record };
      },
    }),
    route({
      method: 'GET',
      path: '/access-keys/:id',
      async handle(ctx) {
        const key = await store.accessKeys.get(keyId(ctx));
        if (!key) throw notFound('access_key', keyId(ctx));
        return { data: key };
      },
    }),
    route<AccessKeyUpdateBody>({
      method: 'PATCH',
      path: '/access-keys/:id',
      body: updateSchema,
      async handle(ctx, sent) {
        const body = withStoredExpiry(sent);
        await checkGroups(store, body.groups);
        const saved = await whenGroupGone(store.accessKeys.update(keyId(ctx), body), unknownGroup(body.groups));
        if (!saved) throw notFound('access_key', keyId(ctx));
        return { data: saved };
      },
    }),
    route({
      method: 'POST',
      path: '/access-keys/:id/rotate',
      idempotent: true,
      async handle(ctx) {
        const rotated = await store.accessKeys.rotate(keyId(ctx));
        if (!rotated) throw notFound('access_key', keyId(ctx));
        return { data: { ...rotated.record, value: rotated.value }, replayData: rotated.record };
      },
    }),
    route({
      method: 'POST',
      path: '/access-keys/:id/reveal',
      async handle(ctx) {
        const id = keyId(ctx);
        if (!(await store.accessKeys.get(id))) throw notFound('access_key', id);
        await recordReveal(deps, ctx, 'access_key.reveal', { access_key_id: id });
        return { data: { id, value: await store.accessKeys.reveal(id) } };
      },
    }),
    route({
      method: 'DELETE',
      path: '/access-keys/:id',
      async handle(ctx) {
        if (!(await store.accessKeys.delete(keyId(ctx)))) throw notFound('access_key', keyId(ctx));
        return {};
      },
    }),
  ];
}

/**
 * The expiry is stored normalized, so that every reader parses it alike; a date-time the
 * schema accepts but that names no instant (`+01`, a leap second) is refused, not stored.
 */
function withStoredExpiry<T extends { expires_at?: string | null }>(body: T): T {
  if (body.expires_at === undefined || body.expires_at === null) return body;
  const expires_at = storedExpiry(body.expires_at);
  if (expires_at === undefined) throw validationFailed('expires_at', 'invalid_value');
  return { ...body, expires_at };
}

async function checkGroups(store: ConfigStore, groups: number[] | null | undefined): Promise<void> {
  if (!groups) return;
  const known = new Set((await store.groups.list()).map((g) => g.id));
  groups.forEach((id, i) => {
    if (!known.has(id)) throw validationFailed(`groups[${i}]`, 'unknown_group');
  });
}

/** A listed Group deleted between the check above and the write is refused as the check refuses it. */
function unknownGroup(groups: number[] | null | undefined): (groupId: number) => Error {
  return (groupId) => validationFailed(`groups[${groups?.indexOf(groupId) ?? 0}]`, 'unknown_group');
}
