import { CHANNELS, CREDENTIAL_KINDS, type ChannelId, type CredentialKindId } from '../../generated/index.ts';
import type { Statistics } from '../../store/log-store.ts';
import type { ManagementContext, ManagementDeps } from '../context.ts';
import { queryEnum } from '../params.ts';
import { periodStart } from '../quota.ts';
import { withRoundedCost } from '../../usage/index.ts';
import { countsByState } from '../credential-counts.ts';
import { route, type RouteDef } from '../route-def.ts';
import { scopedKeyId } from '../scope.ts';
import { visibleModelNames } from '../visibility.ts';

const RANGES = { '24h': { ms: 86_400_000, bucket: 'hour' }, '7d': { ms: 7 * 86_400_000, bucket: 'day' }, '30d': { ms: 30 * 86_400_000, bucket: 'day' } } as const;
const SUBSCRIPTION_FLOWS = ['oauth', 'device'];

export function homeRoutes(deps: ManagementDeps): RouteDef[] {
  const { store, logs } = deps;

  async function todayStatistics(ctx: ManagementContext) {
    const keyId = scopedKeyId(ctx.state.principal);
    const from = periodStart('day', deps.clock());
    return roundedStatistics(await logs.statistics(keyId === undefined ? { from } : { from, access_key_id: keyId }));
  }

  return [
    route({
      method: 'GET',
      path: '/home',
      async handle(ctx) {
        const groups = await store.groups.list();
        const principal = ctx.state.principal;
        if (principal.kind === 'access_key') {
          const key = principal.accessKey;
          return {
            data: {
              access_key: key,
              models: visibleModelNames(key, groups).length,
              today: await todayStatistics(ctx),
              // As the data plane weighs it (its requests in flight included).
              quota: await deps.quotaOf(key, deps.clock()),
            },
          };
        }
        // One read of every credential (one per Group filtered them all each time), in the Groups' order.
        const byGroup = await store.credentials.listAll();
        const credentials = groups.flatMap((g) => byGroup.get(g.id) ?? []);
        const keys = await store.accessKeys.list();
        const subscriptionAccounts = credentials
          .filter((c) => SUBSCRIPTION_FLOWS.includes(CREDENTIAL_KINDS[c.kind as CredentialKindId]?.flow ?? ''))
          .map((c) => ({ group_id: c.group_id, credential_id: c.id, kind: c.kind, name: c.name, state: c.state, disabled_reason: c.disabled_reason, cooldown_until: c.cooldown_until, reset_credits_consumed: c.reset_credits_consumed }));
        return {
          data: {
            groups: { total: groups.length, enabled: groups.filter((g) => g.enabled).length, channels: new Set(groups.map((g) => g.channel).filter((c): c is ChannelId => Object.hasOwn(CHANNELS, c))).size },
            credentials: countsByState(credentials),
            access_keys: { total: keys.length, enabled: keys.filter((k) => k.enabled).length },
            models: new Set(groups.flatMap((g) => g.models.map((m) => m.external))).size,
            today: await todayStatistics(ctx),
            subscription_accounts: subscriptionAccounts,
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/home/statistics',
      query: ['range'],
      async handle(ctx) {
        const range = queryEnum(ctx, 'range', Object.keys(RANGES) as Array<keyof typeof RANGES>) ?? '7d';
        const to = deps.clock();
        const from = to - RANGES[range].ms;
        const keyId = scopedKeyId(ctx.state.principal);
        const scope = keyId === undefined ? {} : { access_key_id: keyId };
        const [totals, series] = await Promise.all([logs.statistics({ from, to, ...scope }), logs.usage({ from, to, bucket: RANGES[range].bucket, group_by: [], ...scope })]);
        return { data: { range, from, to, totals: roundedStatistics(totals), series: series.map(withRoundedCost) } };
      },
    }),
  ];
}

/** Statistics with every cost sum rounded as each cost is (the store's sums carry float noise). */
function roundedStatistics(statistics: Statistics): Statistics {
  return { ...withRoundedCost(statistics), top_models: statistics.top_models.map(withRoundedCost) };
}
