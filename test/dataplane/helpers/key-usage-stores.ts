import type { Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteLogStore, openWorkerLogStore, type LogRecord, type LogStore } from '../../../src/store/logs/index.ts';
import { MemoryLogStore } from '../../../src/store/memory/memory-log-store.ts';
import { logRecord } from '../../management/support/log-records.ts';

// The log stores a quota meter reads key usage from, each on a data directory of its own that
// the test removes, and records that carry only their key, time and input tokens.

export type LogStoreKind = 'sqlite' | 'worker' | 'memory';

export async function openLogStore(t: Test, kind: LogStoreKind): Promise<LogStore> {
  if (kind === 'memory') return new MemoryLogStore();
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-key-usage-'));
  const logs = kind === 'sqlite' ? openSqliteLogStore(dir) : await openWorkerLogStore(dir);
  t.teardown(async () => {
    await logs.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return logs;
}

let seq = 0;

/** A record of `tokens` input tokens by key `keyId` at `createdAt`, with no cost. */
export function tokenRecord(keyId: number, createdAt: number, tokens: number): LogRecord {
  return logRecord({ request_id: `tokens_${++seq}`, access_key_id: keyId, created_at: createdAt, usage: { input_tokens: tokens, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 }, cost: 0 });
}
