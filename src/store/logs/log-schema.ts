/**
 * Request logs live in one compact table for scans and aggregation; recorded bodies sit in a
 * side table so that listing and usage queries never page through large bodies.
 * `seq` breaks ties between records with the same created_at and orders the cursor. It is a
 * plain rowid, not AUTOINCREMENT: only the oldest records are ever deleted (retention), so
 * rowids still grow with time, and keeping sqlite_sequence up to date cost about 1 us of the
 * ~8 us insert (files created with AUTOINCREMENT keep it; both behave the same).
 */
export const LOG_SCHEMA = `
CREATE TABLE IF NOT EXISTS request_logs (
  seq INTEGER PRIMARY KEY,
  request_id TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  access_key_id INTEGER,
  group_id TEXT,
  channel TEXT,
  credential_id TEXT,
  protocol TEXT NOT NULL,
  operation TEXT NOT NULL,
  route_mode TEXT,
  effective TEXT,
  external_model TEXT,
  upstream_model TEXT,
  status INTEGER NOT NULL,
  error_code TEXT,
  attempt_count INTEGER NOT NULL,
  attempts TEXT NOT NULL,
  client_aborted INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ttfb_ms INTEGER,
  duration_ms INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  currency TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS request_logs_time ON request_logs (created_at, seq);
CREATE INDEX IF NOT EXISTS request_logs_key_time ON request_logs (access_key_id, created_at, seq);
CREATE INDEX IF NOT EXISTS request_logs_group_time ON request_logs (group_id, created_at, seq);
CREATE INDEX IF NOT EXISTS request_logs_model_time ON request_logs (external_model, created_at, seq);
CREATE INDEX IF NOT EXISTS request_logs_status_time ON request_logs (status, created_at, seq);
-- What retention deleted, per AccessKey and UTC hour, so that quotas keep counting it: every
-- quota period starts on an hour, so the hours at or after a period's start are in it.
CREATE TABLE IF NOT EXISTS pruned_usage_by_hour (
  access_key_id INTEGER NOT NULL,
  hour_start INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  PRIMARY KEY (access_key_id, hour_start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS request_bodies (
  request_id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  original_bytes INTEGER NOT NULL,
  body TEXT NOT NULL,
  is_json INTEGER NOT NULL
) WITHOUT ROWID;
`;
