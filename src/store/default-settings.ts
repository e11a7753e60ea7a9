import type { Settings } from './records.ts';

export const DEFAULT_SETTINGS: Readonly<Settings> = {
  trusted_proxies: [],
  proxy_url: null,
  update_feed_url: null,
  model_price_sync_url: null,
  log_retention_days: 30,
  request_timeout_seconds: 590,
  stream_idle_timeout_seconds: 120,
  // Node's own default: what direct SDK clients have always had.
  client_keep_alive_timeout_seconds: 5,
  credential_cooldown_seconds: 60,
  server_error_cooldown_seconds: 5,
  max_attempts_per_request: 3,
};
