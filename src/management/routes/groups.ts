import { notFound, validationFailed } from '../../http/api-error.ts';
import type { GroupCreateBody } from '../../generated/management/group-create.ts';
import type { GroupModelsBody } from '../../generated/management/group-models.ts';
import type { GroupSettingsBody } from '../../generated/management/group-settings.ts';
import type { GroupModel, GroupRecord } from '../../store/records.ts';
import { MODEL_FIELD_BYTES, withinModelCap } from '../../dataplane/body/model-name-cap.ts';
import { channelOf, channelRequiresBaseUrl, checkProxyAllowed } from '../channel-rules.ts';
import { checkBaseUrl } from '../check-base-url.ts';
import type { ManagementDeps } from '../context.ts';
import { idParam } from '../params.ts';
import { requireGroupInPath } from '../require-group.ts';
import { countsByState } from '../credential-counts.ts';
import { route, type RouteDef } from '../route-def.ts';
import groupCreateSchema from '../schemas/group-create.json' with { type: 'json' };
import groupModelsSchema from '../schemas/group-models.json' with { type: 'json' };
import groupSettingsSchema from '../schemas/group-settings.json' with { type: 'json' };

export function groupRoutes(deps: ManagementDeps): RouteDef[] {
  const { store } = deps;

  async function withCounts(g: GroupRecord) {
    return { ...g, credentials: countsByState(await store.credentials.list(g.id)) };
  }

  return [
    route({
      method: 'GET',
      path: '/groups',
      async handle() {
        // Every credential in one read: one per Group filtered them all each time (Groups × credentials).
        const [groups, byGroup] = await Promise.all([store.groups.list(), store.credentials.listAll()]);
        return { data: groups.map((g) => ({ ...g, credentials: countsByState(byGroup.get(g.id) ?? []) })) };
      },
    }),
    route<GroupCreateBody>({
      method: 'POST',
      path: '/groups',
      body: groupCreateSchema,
      idempotent: true,
      async handle(_ctx, body) {
        checkLocation(body.channel, body.base_url ?? null, body.proxy_url ?? null);
        const models = normalizeModels(body.models ?? []);
        const group = await store.groups.create({ ...body, models });
        return { status: 201, data: await withCounts(group) };
      },
    }),
    route({
      method: 'GET',
      path: '/groups/:group_id',
      async handle(ctx) {
        return { data: await withCounts(await requireGroupInPath(ctx, store.groups)) };
      },
    }),
    route({
      method: 'GET',
      path: '/groups/:group_id/settings',
      async handle(ctx) {
        return { data: settingsOf(await requireGroupInPath(ctx, store.groups)) };
      },
    }),
    route<GroupSettingsBody>({
      method: 'PUT',
      path: '/groups/:group_id/settings',
      body: groupSettingsSchema,
      async handle(ctx, body) {
        const current = await requireGroupInPath(ctx, store.groups);
        const next = { ...current, ...body };
        checkLocation(current.channel, next.base_url, next.proxy_url);
        const saved = await store.groups.update(current.id, body);
        if (!saved) throw notFound('group', current.id);
        return { data: settingsOf(saved) };
      },
    }),
    route({
      method: 'GET',
      path: '/groups/:group_id/models',
      async handle(ctx) {
        return { data: (await requireGroupInPath(ctx, store.groups)).models };
      },
    }),
    route<GroupModelsBody>({
      method: 'PUT',
      path: '/groups/:group_id/models',
      body: groupModelsSchema,
      async handle(ctx, body) {
        const id = idParam(ctx, 'group_id', 'group');
        const saved = await store.groups.setModels(id, normalizeModels(body.models, 'models'));
        if (!saved) throw notFound('group', id);
        return { data: saved.models };
      },
    }),
    route({
      method: 'DELETE',
      path: '/groups/:group_id',
      async handle(ctx) {
        const id = idParam(ctx, 'group_id', 'group');
        if (!(await store.groups.delete(id))) throw notFound('group', id);
        return {};
      },
    }),
  ];
}

function settingsOf(g: GroupRecord) {
  const { id, name, description, channel, base_url, versionless_api, proxy_url, priority, weight, enabled } = g;
  return { id, name, description, channel, base_url, versionless_api, proxy_url, priority, weight, enabled };
}

function checkLocation(channel: string, baseUrl: string | null, proxyUrl: string | null): void {
  channelOf(channel);
  if (baseUrl === null && channelRequiresBaseUrl(channel)) throw validationFailed('base_url', 'required', { channel });
  if (baseUrl !== null) checkBaseUrl(baseUrl, 'base_url');
  checkProxyAllowed(channel, proxyUrl);
}

/**
 * The upstream name defaults to the external one; an external name appears once per Group, and
 * is one a client can send: the data plane refuses a model name over MODEL_FIELD_BYTES of UTF-8
 * (300 emoji are 1200), so a longer one would be listed and inspected as routable, never served.
 */
function normalizeModels(models: ReadonlyArray<{ external: string; upstream?: string }>, field = 'models'): GroupModel[] {
  const seen = new Set<string>();
  return models.map((m, i) => {
    if (!withinModelCap(m.external)) throw validationFailed(`${field}[${i}].external`, 'invalid_value', { max_bytes: MODEL_FIELD_BYTES });
    if (seen.has(m.external)) throw validationFailed(`${field}[${i}].external`, 'duplicate');
    seen.add(m.external);
    return { external: m.external, upstream: m.upstream ?? m.external };
  });
}
