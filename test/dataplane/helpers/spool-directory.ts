import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Gateway } from './data-plane-harness.ts';
import { eventually } from './dataplane-scenarios.ts';

/** The files in the gateway's spool directory: a spooled body is a file there while its request runs. */
export function spoolFiles(gw: Gateway): string[] {
  return readdirSync(path.join(gw.dataDir, 'spool'));
}

/** Waits until the spool directory is empty: every spooled body is removed once its request is done. */
export async function spoolEmptied(gw: Gateway): Promise<void> {
  await eventually(() => (spoolFiles(gw).length === 0 ? true : undefined), 'the spool directory emptied');
}
