import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { systemClock, type Clock } from '../clock.ts';
import type { ConfigStore } from '../config-store.ts';
import { LowdbAccessKeyStore } from './access-keys.ts';
import { checkAuditShape, emptyAudit, LowdbAuditStore } from './audit.ts';
import { checkConfigShape, emptyConfig } from './config-document.ts';
import { LowdbCredentialStageStore } from './credential-stages.ts';
import { LowdbCredentialStore } from './credentials.ts';
import { LowdbGroupStore } from './groups.ts';
import { journalStamp } from './idempotency-journal.ts';
import { checkIdempotencyShape, emptyIdempotency, LowdbIdempotencyStore } from './idempotency.ts';
import { JsonDocument } from './json-document.ts';
import { LowdbModelPriceStore } from './model-prices.ts';
import { COOLDOWN_FLUSH_MS, PendingCooldowns } from './pending-cooldowns.ts';
import { reserveIds } from './reserve-ids.ts';
import { SecretBox } from './secret-box.ts';
import { LowdbSettingsStore } from './settings.ts';

export const DATA_FILES = {
  config: 'config.json',
  idempotency: 'idempotency.json',
  audit: 'audit.json',
  secretKey: 'secret.key',
} as const;

export interface OpenOptions {
  clock?: Clock;
  /** Reads what is there and writes nothing (offline inspection next to a running server). */
  readOnly?: boolean;
  /** How long cooldown verdicts wait in memory for their one write (COOLDOWN_FLUSH_MS); tests shorten it. */
  cooldownFlushMs?: number;
}

/**
 * Opens (or creates) the configuration in `dataDir`. Any unusable file stops the start with
 * a StoreFileError naming it; opening never rewrites an existing file.
 */
export async function openLowdbConfigStore(dataDir: string, options: OpenOptions = {}): Promise<ConfigStore> {
  const clock = options.clock ?? systemClock;
  const readOnly = options.readOnly ?? false;
  if (!readOnly) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(dataDir, 0o700);
  }
  const file = (name: string) => path.join(dataDir, name);
  const config = await JsonDocument.open(file(DATA_FILES.config), emptyConfig, checkConfigShape, readOnly, journalStamp(clock));
  const idempotency = await JsonDocument.open(file(DATA_FILES.idempotency), emptyIdempotency, checkIdempotencyShape, readOnly);
  const audit = await JsonDocument.open(file(DATA_FILES.audit), emptyAudit, checkAuditShape, readOnly);
  const holdsSecrets = config.data.credentials.length > 0 || config.data.access_keys.length > 0;
  const box = await SecretBox.open(file(DATA_FILES.secretKey), !holdsSecrets, readOnly);
  const pendingCooldowns = new PendingCooldowns(config, clock, options.cooldownFlushMs ?? COOLDOWN_FLUSH_MS, !readOnly);
  const credentials = new LowdbCredentialStore(config, box, clock, pendingCooldowns);
  return {
    groups: new LowdbGroupStore(config, clock),
    credentials,
    accessKeys: new LowdbAccessKeyStore(config, box, clock),
    settings: new LowdbSettingsStore(config, clock),
    modelPrices: new LowdbModelPriceStore(config, clock),
    credentialStages: new LowdbCredentialStageStore(config, clock),
    idempotency: new LowdbIdempotencyStore(idempotency, config),
    audit: new LowdbAuditStore(audit),
    generation: () => config.generation,
    cooldownVersion: () => pendingCooldowns.version,
    cooledSince: (version) => credentials.cooledSince(version),
    writesFailing: () => [config, idempotency, audit].some((doc) => doc.lastWriteFailed),
    reserveIds: (named) => reserveIds(config, named),
    async close() {
      await pendingCooldowns.close();
      await Promise.all([config.close(), idempotency.close(), audit.close()]);
    },
  };
}
