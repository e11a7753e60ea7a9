import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { LOG_DB_FILE, openSqliteLogStore, openWorkerLogStore } from '../../src/store/logs/index.ts';
import { logRecord } from './support/log-records.ts';
import { tempDataDir } from './support/gateway.ts';

// docs/data-plane-internals.md, Request logs: opening a file of an older LOG_SCHEMA_VERSION
// rebuilds the usage tables before the server listens, and says so in one line, once.

t.test('a rebuild after an upgrade is announced once, through the worker, before the store is ready', async (t) => {
  const dir = tempDataDir(t);
  const first = openSqliteLogStore(dir, { batchSize: 2 });
  for (let i = 0; i < 5; i++) first.append(logRecord({ request_id: `req_${i}` }));
  await first.close();
  const db = new Database(join(dir, LOG_DB_FILE));
  const batches = db.prepare('SELECT COUNT(*) FROM log_batches').pluck().get() as number;
  db.pragma('user_version = 0');
  db.close();

  const notices: string[] = [];
  const upgraded = await openWorkerLogStore(dir, { onNotice: (m) => notices.push(m) });
  t.same(notices, [`rebuilding request-log usage tables (${batches} batches), once after an upgrade`], 'one line, said before open resolved');
  t.equal((await upgraded.usage({ bucket: 'day', group_by: [] }))[0]?.requests, 5, 'the rebuilt tables answer');
  await upgraded.close();

  const again = await openWorkerLogStore(dir, { onNotice: (m) => notices.push(m) });
  await again.close();
  t.equal(notices.length, 1, 'nothing to rebuild on the next open, nothing said');
});
