import type { CredentialView } from '../../../src/store/records.ts';

/** An api_key credential's view in Group 1, cooling until `cooldownUntil` (null: active), for pool tests of large Groups. */
export function coolingView(id: number, cooldownUntil: string | null): CredentialView {
  return {
    id,
    group_id: 1,
    kind: 'api_key',
    name: null,
    fields: {},
    masked: {},
    enabled: true,
    disabled_reason: null,
    cooldown_until: cooldownUntil,
    reset_credits_consumed: 0,
    weight: 1,
    proxy_url: null,
    created_at: '',
    updated_at: '',
    revision: 1,
    state: cooldownUntil === null ? 'active' : 'cooldown',
  } as unknown as CredentialView;
}
