import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ApiError } from '../../http/api-error.ts';
import { inspectRoute, type RouteInspection } from '../../management/inspect/inspect-route.ts';
import { LOG_DB_FILE, openSqliteLogStore, type LogStore } from '../../store/logs/index.ts';
import { DATA_FILES, openLowdbConfigStore, StoreFileError } from '../../store/lowdb/index.ts';
import { CliError } from '../cli-error.ts';

const USAGE = 'usage: switchyard inspect --protocol P --model M --access-key ID [--json] [--data DIR | --url URL]';

/**
 * Route inspection from the command line: the same answer as POST /api/route/inspect,
 * computed offline from the data directory, or asked of a running server (--url, with the
 * AUTH_KEY from the environment). Exit code 0 when routable, 1 when not.
 */
export async function runInspect(argv: string[], env: Readonly<Record<string, string | undefined>> = process.env): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      protocol: { type: 'string' },
      model: { type: 'string' },
      'access-key': { type: 'string' },
      json: { type: 'boolean', default: false },
      data: { type: 'string' },
      url: { type: 'string' },
    },
    strict: true,
  });
  const { protocol, model } = values;
  const accessKeyId = Number(values['access-key']);
  if (!protocol || !model || !Number.isSafeInteger(accessKeyId) || accessKeyId < 1) throw new CliError(USAGE);
  if (values.url !== undefined && values.data !== undefined) throw new CliError(`--data and --url exclude each other\n${USAGE}`);
  const input = { protocol, external_model: model, access_key_id: accessKeyId };
  const result = values.url !== undefined ? await inspectRemote(values.url, env.AUTH_KEY, input) : await inspectOffline(values.data ?? './data', input);
  process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : describe(result));
  return result.routable ? 0 : 1;
}

async function inspectOffline(dataDir: string, input: { protocol: string; external_model: string; access_key_id: number }): Promise<RouteInspection> {
  if (!existsSync(path.join(dataDir, DATA_FILES.config))) throw new CliError(`no switchyard data in ${dataDir} (missing ${DATA_FILES.config})`, 1);
  let store;
  try {
    store = await openLowdbConfigStore(dataDir, { readOnly: true });
  } catch (err) {
    if (err instanceof StoreFileError) throw new CliError(err.message, 1);
    throw err;
  }
  let logs: LogStore | undefined;
  try {
    logs = existsSync(path.join(dataDir, LOG_DB_FILE)) ? openSqliteLogStore(dataDir) : undefined;
    return await inspectRoute({ groups: store.groups, credentials: store.credentials, accessKeys: store.accessKeys, logs, now: Date.now() }, input);
  } catch (err) {
    if (err instanceof ApiError) throw new CliError(`${err.code}: ${JSON.stringify(err.data)}`, 1);
    throw err;
  } finally {
    await Promise.allSettled([store.close(), logs?.close()]);
  }
}

async function inspectRemote(url: string, authKey: string | undefined, input: object): Promise<RouteInspection> {
  if (!authKey) throw new CliError('--url needs the AUTH_KEY in the environment variable AUTH_KEY');
  let res: Response;
  try {
    res = await fetch(new URL('/api/route/inspect', url), {
      method: 'POST',
      headers: { authorization: `Bearer ${authKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(input),
    });
  } catch (err) {
    throw new CliError(`cannot reach ${url}: ${(err as Error).message}`, 1);
  }
  const envelope = (await res.json().catch(() => undefined)) as { code?: unknown; message?: string; data?: unknown } | undefined;
  if (!envelope || envelope.code !== 0) {
    throw new CliError(`${url} answered ${res.status}${envelope ? ` ${String(envelope.code)}: ${envelope.message ?? ''} ${JSON.stringify(envelope.data ?? {})}` : ''}`, 1);
  }
  return envelope.data as RouteInspection;
}

function describe(r: RouteInspection): string {
  const lines = [
    `routable: ${r.routable ? 'yes' : `no (${r.reason_code}${r.detail ? `: ${r.detail}` : ''})`}`,
    `request: ${r.request.protocol} ${r.request.operation}, model "${r.request.external_model}", access key #${r.access_key.id} "${r.access_key.name}"`,
  ];
  if (r.candidates.length === 0) lines.push('candidates: none (no Group maps this model)');
  for (const c of r.candidates) {
    const route = c.route.ok ? `${c.route.declared} -> ${c.route.effective}${c.route.wire ? ` via ${c.route.wire}` : ''}` : `refused ${c.route.reason_code}`;
    const status = c.included ? `included, tier ${c.tier}, share ${Math.round((c.share_in_tier ?? 0) * 100)}%` : `excluded: ${c.reason_code}`;
    lines.push(`group #${c.group_id} "${c.group_name}" ${c.channel} priority ${c.priority} weight ${c.weight} upstream "${c.upstream_model ?? ''}": ${status}; route ${route}`);
    for (const k of c.credentials) lines.push(`  credential #${k.id} ${k.kind} ${k.state}: ${k.available ? 'available' : k.reason_code}`);
  }
  return `${lines.join('\n')}\n`;
}
