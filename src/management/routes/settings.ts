import { isAddressOrCidr } from '../../auth/is-address-or-cidr.ts';
import { validationFailed } from '../../http/api-error.ts';
import type { SettingsBody } from '../../generated/management/settings.ts';
import { checkProxyUrlUsable } from '../channel-rules.ts';
import type { ManagementDeps } from '../context.ts';
import { route, type RouteDef } from '../route-def.ts';
import settingsSchema from '../schemas/settings.json' with { type: 'json' };

export function settingsRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/settings',
      async handle() {
        return { data: await deps.store.settings.get() };
      },
    }),
    route<SettingsBody>({
      method: 'PUT',
      path: '/settings',
      body: settingsSchema,
      // Saves exactly the submitted items; no If-Match, the last save of an item wins.
      async handle(_ctx, body) {
        body.trusted_proxies?.forEach((entry, i) => {
          if (!isAddressOrCidr(entry)) throw validationFailed(`trusted_proxies[${i}]`, 'invalid_value', { expected: 'IP address or CIDR' });
        });
        checkProxyUrlUsable(body.proxy_url);
        const saved = await deps.store.settings.save(body);
        deps.settingsSaved?.(saved);
        return { data: saved };
      },
    }),
  ];
}
