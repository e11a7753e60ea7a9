import type { ServerLog } from '../http/error-middleware.ts';
import type { Clock } from '../store/clock.ts';
import type { ConfigStore } from '../store/config-store.ts';
import type { LogStore } from '../store/logs/index.ts';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** Calls `prune` from time to time; returns what stops it. */
export type RetentionSchedule = (prune: () => Promise<void>) => () => void;

/** Every hour, on a timer that does not keep the process alive. */
export const hourlyRetention: RetentionSchedule = (prune) => {
  const timer = setInterval(() => void prune(), HOUR_MS).unref();
  return () => clearInterval(timer);
};

export interface LogRetentionDeps {
  store: ConfigStore;
  logs: LogStore;
  clock: Clock;
  log: ServerLog;
}

/**
 * Deletes the request logs older than the `log_retention_days` setting: now, then on
 * `schedule`. The setting is read on each run, so a change applies at the next one. Runs never
 * overlap: one asked for while another is under way starts after it. Returns what stops it.
 */
export function startLogRetention({ store, logs, clock, log }: LogRetentionDeps, schedule: RetentionSchedule): () => void {
  let stopped = false;
  let last: Promise<void> = Promise.resolve();
  let next: Promise<void> | undefined;
  const pruneOnce = async (): Promise<void> => {
    next = undefined;
    if (stopped) return;
    try {
      const { log_retention_days } = await store.settings.get();
      await logs.prune(clock() - log_retention_days * DAY_MS);
    } catch (error) {
      // A run cut short by the server closing is expected; anything else is reported, and the next run tries again.
      if (!stopped) log(`switchyard: log retention: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const prune = (): Promise<void> => {
    next ??= last = last.then(pruneOnce);
    return next;
  };
  void prune();
  const unschedule = schedule(prune);
  return () => {
    stopped = true;
    unschedule();
  };
}
