import type { ManagementDeps } from './context.ts';
import type { RouteDef } from './route-def.ts';
import { accessKeyRoutes } from './routes/access-keys.ts';
import { auditRoutes } from './routes/audit.ts';
import { authSessionRoutes } from './routes/auth-session.ts';
import { channelRoutes } from './routes/channels.ts';
import { credentialStageRoutes } from './routes/credential-stages.ts';
import { credentialRoutes } from './routes/credentials.ts';
import { groupRoutes } from './routes/groups.ts';
import { healthRoutes } from './routes/health.ts';
import { homeRoutes } from './routes/home.ts';
import { logRoutes } from './routes/logs.ts';
import { modelPriceRoutes } from './routes/model-prices.ts';
import { modelRoutes } from './routes/models.ts';
import { routeInspectRoutes } from './routes/route-inspect.ts';
import { settingsRoutes } from './routes/settings.ts';
import { systemRoutes } from './routes/system.ts';
import { usageRoutes } from './routes/usage.ts';

/** Every management operation, by resource. */
export function allRoutes(deps: ManagementDeps): RouteDef[] {
  return [
    ...authSessionRoutes(),
    ...homeRoutes(deps),
    ...healthRoutes(deps),
    ...logRoutes(deps),
    ...usageRoutes(deps),
    ...settingsRoutes(deps),
    ...systemRoutes(deps),
    ...routeInspectRoutes(deps),
    ...channelRoutes(),
    ...modelRoutes(deps),
    ...modelPriceRoutes(deps),
    ...groupRoutes(deps),
    ...credentialRoutes(deps),
    ...credentialStageRoutes(deps),
    ...accessKeyRoutes(deps),
    ...auditRoutes(deps),
  ];
}
