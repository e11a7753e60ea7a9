import type { LogRecord } from '../store/logs/index.ts';
import type { Candidate } from './plan-candidates.ts';

/** A candidate's route in the record: its Group, channel and upstream model, and the mode the engine resolved (none when it refused). */
export function noteRoute(log: LogRecord, c: Candidate): void {
  log.group_id = String(c.group.id);
  log.channel = c.group.channel;
  log.upstream_model = c.upstream_model;
  if (c.resolution.ok) {
    log.route_mode = c.resolution.declared;
    log.effective = c.resolution.effective;
  }
}
