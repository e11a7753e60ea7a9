import { ApiError, notFound, validationFailed } from '../../http/api-error.ts';
import type { ModelDiscoverBody } from '../../generated/management/model-discover.ts';
import { channelOf } from '../channel-rules.ts';
import type { ManagementDeps } from '../context.ts';
import { DiscoveryFailed, DiscoveryRefused, type DiscoveredModels } from '../model-discovery.ts';
import { requireGroup } from '../require-group.ts';
import type { CredentialView } from '../../store/records.ts';
import { route, type RouteDef } from '../route-def.ts';
import discoverSchema from '../schemas/model-discover.json' with { type: 'json' };
import { visibleModelNames } from '../visibility.ts';
import { googleModelResource } from '../../dataplane/google-model-resource.ts';

export function modelRoutes(deps: ManagementDeps): RouteDef[] {
  const { store } = deps;
  return [
    route({
      method: 'GET',
      path: '/models',
      async handle(ctx) {
        const groups = await store.groups.list();
        const principal = ctx.state.principal;
        if (principal.kind === 'access_key') {
          return { data: visibleModelNames(principal.accessKey, groups).map((model) => ({ model })) };
        }
        const byModel = new Map<string, Array<{ group_id: number; group_name: string; channel: string; upstream: string; enabled: boolean }>>();
        for (const g of groups) {
          for (const m of g.models) {
            const list = byModel.get(m.external) ?? [];
            list.push({ group_id: g.id, group_name: g.name, channel: g.channel, upstream: m.upstream, enabled: g.enabled });
            byModel.set(m.external, list);
          }
        }
        return { data: [...byModel.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([model, exposedBy]) => ({ model, groups: exposedBy })) };
      },
    }),
    route<ModelDiscoverBody>({
      method: 'POST',
      path: '/models/discover',
      body: discoverSchema,
      async handle(_ctx, body) {
        const group = await requireGroup(store.groups, body.group_id);
        if (!channelOf(group.channel).discovery) throw validationFailed('group_id', 'channel_without_discovery', { channel: group.channel });
        const credentials = await store.credentials.list(group.id);
        const candidates = body.credential_id === undefined ? credentials.filter((c) => c.state === 'active') : credentials.filter((c) => c.id === body.credential_id);
        if (candidates.length === 0) {
          if (body.credential_id !== undefined) throw notFound('credential', body.credential_id);
          throw new ApiError('CONFLICT', { data: { reason: 'no_active_credential' } });
        }
        const discovery = deps.modelDiscovery;
        if (!discovery) throw new ApiError('SERVICE_UNAVAILABLE', { data: { reason: 'model_discovery_not_available' } });
        const settings = await store.settings.get();
        const timeouts = { headersMs: settings.request_timeout_seconds * 1000, bodyIdleMs: settings.stream_idle_timeout_seconds * 1000, totalMs: settings.request_timeout_seconds * 1000 };
        let found: { credential: CredentialView; discovered: DiscoveredModels } | undefined;
        for (const [i, credential] of candidates.entries()) {
          const values = (await store.credentials.reveal(group.id, credential.id)) ?? {};
          const proxy = channelOf(group.channel).proxy ? (credential.proxy_url ?? group.proxy_url ?? settings.proxy_url) : null;
          try {
            found = { credential, discovered: await discovery.list({ group, credential, values, proxy, timeouts }) };
            break;
          } catch (err) {
            // A Group may hold static keys and flow credentials both (ch16, ch17): the next active one may be a key to list with.
            if (err instanceof DiscoveryRefused && err.reason === 'credential_needs_flow' && i < candidates.length - 1) continue;
            throw discoveryError(err, credential.kind);
          }
        }
        const { credential, discovered } = found!;
        const { collection } = discovered;
        const configured = new Set(group.models.map((m) => configuredId(m.upstream, collection)));
        const models = discovered.models.map((id) => ({ id, configured: configured.has(id) }));
        return { data: { group_id: group.id, credential_id: credential.id, models, truncated: discovered.truncated } };
      },
    }),
  ];
}

/** A Group's upstream model as discovery lists it: a Google resource name in the listed collection is its id, as the data plane calls both alike. */
function configuredId(upstream: string, collection: string | undefined): string {
  const resource = collection === undefined ? undefined : googleModelResource(upstream);
  return resource !== undefined && resource.collection === collection ? resource.id : upstream;
}

/** Why discovery with a credential failed: the configuration (discoveryRefusal), else the upstream. */
function discoveryError(err: unknown, kind: string): ApiError {
  if (err instanceof DiscoveryRefused) return discoveryRefusal(err, kind);
  // The upstream's status says what went wrong (401: the key); its body is not passed on, as it may echo the key.
  const failed = err instanceof DiscoveryFailed ? err : undefined;
  const upstreamStatus = failed?.upstreamStatus;
  return new ApiError('BAD_GATEWAY', { data: { reason: 'discovery_failed', ...(upstreamStatus === undefined ? {} : { upstream_status: upstreamStatus }), ...(failed ? { detail: failed.message } : {}) }, cause: err });
}

/**
 * A Group or credential the provider cannot list with: a flow credential as a server without a
 * provider (503), missing configuration as the data plane names it (409).
 */
function discoveryRefusal(refused: DiscoveryRefused, kind: string): ApiError {
  if (refused.reason === 'credential_needs_flow') return new ApiError('SERVICE_UNAVAILABLE', { data: { reason: 'model_discovery_not_available', credential_kind: kind } });
  return new ApiError('CONFLICT', { data: { reason: refused.reason } });
}
