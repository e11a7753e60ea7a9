import type { RouterContext } from '@koa/router';
import type { Principal } from '../auth/principal.ts';
import type { ServerLog } from '../http/error-middleware.ts';
import type { Locale } from '../http/error-codes.ts';
import type { SchemaValidator } from '../http/schema-validator.ts';
import type { Clock } from '../store/clock.ts';
import type { ConfigStore } from '../store/config-store.ts';
import type { LogReader } from '../store/log-store.ts';
import type { Settings } from '../store/records.ts';
import type { CredentialFlowProvider } from './credential-flows.ts';
import type { ModelDiscovery } from './model-discovery.ts';
import type { PriceCatalogEntry } from './price-catalog.ts';
import type { QuotaOf } from './quota.ts';

export interface RequestLogHealth {
  /** Records appended but not yet written. */
  buffered: number;
  /** Records dropped since start because the store could not keep up. */
  dropped: number;
  /** Bytes the buffered records take (encoding and bodies' text), where the store bounds them; else 0. */
  buffered_bytes: number;
  /** Recorded bodies let go since start to keep within that bound (their records kept, state `dropped`); else 0. */
  bodies_dropped: number;
}

export interface ManagementState {
  locale: Locale;
  peer: string;
  principal: Principal;
}

export type ManagementContext = RouterContext<ManagementState>;

/** Everything the resource routers use; built once by the server. */
export interface ManagementDeps {
  store: ConfigStore;
  logs: LogReader;
  clock: Clock;
  validator: SchemaValidator;
  log: ServerLog;
  /** Outbound HTTP for the release feed and price sync (injectable for tests). */
  fetch: typeof fetch;
  version: string;
  startedAt: number;
  priceCatalog: readonly PriceCatalogEntry[];
  /** Provided by the adapters; without it discovery answers 503 SERVICE_UNAVAILABLE. */
  modelDiscovery: ModelDiscovery | undefined;
  /**
   * A key's quota as the data plane's meter weighs it (requests in flight hold their places), for
   * route inspection and a key's /api/home; the app answers its failing reads as `logs`' are.
   */
  quotaOf: QuotaOf;
  /** What /api/health shows of the request-log pipeline; without it, zeros. */
  requestLogHealth?: () => RequestLogHealth;
  /** Provided by the adapters; without it stages wait for a manual import. */
  credentialFlows: CredentialFlowProvider | undefined;
  /** Told the settings after each save, for what the server holds itself rather than reads per request. */
  settingsSaved?: (settings: Settings) => void;
}
