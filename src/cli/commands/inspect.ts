import { statSync } from 'node:fs';
import { validateHeaderValue } from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ApiError } from '../../http/api-error.ts';
import { inspectRoute, type CredentialAvailability, type RouteInspection } from '../../management/inspect/inspect-route.ts';
import { LOG_DB_FILE } from '../../store/logs/index.ts';
import { LogFileError, openSqliteLogReader, type SqliteLogReader } from '../../store/logs/sqlite-log-reader.ts';
import { DATA_FILES, openLowdbConfigStore, StoreFileError } from '../../store/lowdb/index.ts';
import { PROTOCOL_IDS } from '../../generated/index.ts';
import { runningHolder } from '../../server/data-dir-lock.ts';
import { CliError } from '../cli-error.ts';
import { parseDecimalOption } from '../parse-decimal-option.ts';
import { quotaStatus } from '../../management/quota.ts';
import type { AccessKeyRecord } from '../../store/records.ts';
import { postJson, type TextAnswer } from '../post-json.ts';
import { protocolOption } from '../protocol-option.ts';
import { requiredOptions } from '../required-options.ts';

/** Its usage line, which `switchyard --help` and `inspect --help` print too. */
export const INSPECT_USAGE = 'inspect --protocol P --model M --access-key ID [--json] [--data DIR | --url URL [--timeout SECONDS]]';
const USAGE = `usage: switchyard ${INSPECT_USAGE}`;

/** How long `--url` waits for the server's answer by default (route inspection answers in milliseconds). */
const DEFAULT_TIMEOUT_S = 30;

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
      timeout: { type: 'string' },
    },
    strict: true,
  });
  const { protocol, model, 'access-key': accessKey } = requiredOptions('inspect', USAGE, values, {
    protocol: `one of: ${PROTOCOL_IDS.join(', ')}`,
    model: 'the model name a client sends',
    'access-key': 'the id of the AccessKey that sends it, as GET /api/access-keys lists them',
  });
  // Checked before any work, as usage errors (exit 2): the id by its digits, the protocol against the manifests.
  const accessKeyId = parseDecimalOption('access-key', 'an AccessKey id', accessKey, 1, Number.MAX_SAFE_INTEGER);
  protocolOption(protocol, USAGE);
  if (values.url !== undefined && values.data !== undefined) throw new CliError(`--data and --url exclude each other\n${USAGE}`);
  if (values.timeout !== undefined && values.url === undefined) throw new CliError(`--timeout applies to --url only\n${USAGE}`);
  const timeoutS = values.timeout === undefined ? DEFAULT_TIMEOUT_S : parseDecimalOption('timeout', 'the seconds to wait for the server', values.timeout, 1, 3600);
  const input = { protocol, external_model: model, access_key_id: accessKeyId };
  const result = values.url !== undefined ? await inspectRemote(values.url, env.AUTH_KEY, input, timeoutS) : await inspectOffline(values.data ?? './data', input);
  process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : describe(result));
  if (values.url === undefined) await noteRunningServer(values.data ?? './data');
  return result.routable ? 0 : 1;
}

async function inspectOffline(dataDir: string, input: { protocol: string; external_model: string; access_key_id: number }): Promise<RouteInspection> {
  const configFile = path.join(dataDir, DATA_FILES.config);
  try {
    statSync(configFile);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`no switchyard data in ${dataDir} (missing ${DATA_FILES.config})`, 1);
    throw unreadable(err, configFile);
  }
  let store;
  try {
    store = await openLowdbConfigStore(dataDir, { readOnly: true });
  } catch (err) {
    throw unreadable(err, configFile);
  }
  let logs: SqliteLogReader | undefined;
  try {
    const reader = openSqliteLogReader(dataDir);
    logs = reader;
    const quotaOf = reader && ((key: AccessKeyRecord, now: number) => quotaStatus(key, reader, now));
    return await inspectRoute({ groups: store.groups, credentials: store.credentials, accessKeys: store.accessKeys, quotaOf, now: Date.now() }, input);
  } catch (err) {
    if (err instanceof ApiError) throw new CliError(`${unknownAccessKey(err.code, err.data) ?? `${err.code}: ${JSON.stringify(err.data)}`} in ${dataDir}`, 1);
    throw unreadable(err, path.join(dataDir, LOG_DB_FILE));
  } finally {
    try {
      logs?.close();
    } finally {
      await store.close();
    }
  }
}

/**
 * A server running on the directory writes its cooldown verdicts a window after it takes them
 * (COOLDOWN_FLUSH_MS), and its requests in flight, which hold places toward a quota, are in no
 * file: the answer may not be the server's. Said on stderr, after the answer.
 */
async function noteRunningServer(dataDir: string): Promise<void> {
  const pid = await runningHolder(dataDir);
  if (pid !== undefined) process.stderr.write(`switchyard: note: a running server (pid ${pid}) holds ${dataDir}; this reads what it has written, which lacks its requests in flight and may lack its latest credential cooldowns: --url asks the server itself\n`);
}

/** Inspection's refusal of an AccessKey id that does not exist (NOT_FOUND), in words; undefined for any other. */
function unknownAccessKey(code: unknown, data: unknown): string | undefined {
  const { resource, id } = (data ?? {}) as { resource?: unknown; id?: unknown };
  return code === 'NOT_FOUND' && resource === 'access_key' ? `no AccessKey with id ${String(id)}` : undefined;
}

/** One line naming the file that could not be read (`file` when the error does not name one). */
function unreadable(err: unknown, file: string): unknown {
  if (err instanceof StoreFileError) return new CliError(`cannot read ${err.message}`, 1);
  if (err instanceof LogFileError) return new CliError(`cannot read ${err.file}: ${err.reason}`, 1);
  const fsError = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || fsError.code === undefined) return err;
  // Node's message repeats the path after the reason ("EACCES: permission denied, open '<file>'").
  const reason = fsError.path === undefined ? fsError.message : fsError.message.replace(/, \w+ '.*'$/, '');
  return new CliError(`cannot read ${fsError.path ?? file}: ${reason}`, 1);
}

async function inspectRemote(url: string, authKey: string | undefined, input: object, timeoutS: number): Promise<RouteInspection> {
  if (!authKey) throw new CliError('--url needs the AUTH_KEY in the environment variable AUTH_KEY');
  // Else the request is not even sent, and the failure would read as an unreachable server.
  try {
    validateHeaderValue('authorization', `Bearer ${authKey}`);
  } catch {
    throw new CliError('the AUTH_KEY in the environment holds a character an HTTP header cannot carry (a line break, say)');
  }
  const endpoint = managementEndpoint(url, 'route/inspect');
  let res: TextAnswer;
  try {
    res = await postJson(endpoint, { authorization: `Bearer ${authKey}` }, JSON.stringify(input), timeoutS * 1000);
  } catch (err) {
    throw new CliError(`cannot reach ${url}: ${connectionFailure(err)}`, 1);
  }
  const envelope = parsedOrUndefined(res.text);
  if (!isEnvelope(envelope)) throw new CliError(`${endpoint} answered ${res.status} but did not answer as a switchyard management API`, 1);
  const unknown = unknownAccessKey(envelope.code, envelope.data);
  if (unknown !== undefined) throw new CliError(`${unknown} at ${url}`, 1);
  // The server words a refused token as a missing one; the CLI did send one, from the environment.
  const said = res.status === 401 ? "the AUTH_KEY in the environment is not this server's" : `${envelope.message}${envelope.data === undefined ? '' : ` ${JSON.stringify(envelope.data)}`}`;
  if (envelope.code !== 0) throw new CliError(`${endpoint} answered ${res.status} ${String(envelope.code)}: ${said}`, 1);
  return envelope.data as RouteInspection;
}

/** Why a server could not be asked, in words for the codes an operator meets most. */
function connectionFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return (code !== undefined && CONNECTION_FAILURES[code]) || String((err as Error).message).split('\n')[0]!;
}

const CONNECTION_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'the connection was reset',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'name resolution failed for now',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  // OpenSSL's own text of it is a line of internals ("ssl3_get_record:wrong version number:...").
  EPROTO: 'the TLS handshake failed (a plain http server there? then its URL starts with http://)',
};

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The management plane is under `{base_url}/api`, so a base URL's path (a proxy's prefix) is kept. */
function managementEndpoint(url: string, route: string): URL {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new CliError(`--url "${url}" is not a URL\n${USAGE}`);
  }
  // The AUTH_KEY goes in the environment: a password in the URL would be sent as Basic and printed with it.
  if (base.username !== '' || base.password !== '') throw new CliError(`--url must not carry a user or password (the AUTH_KEY goes in the environment variable AUTH_KEY)\n${USAGE}`);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new CliError(`--url must be an http or https URL, not "${url}"\n${USAGE}`);
  base.pathname = base.pathname.replace(/\/*$/, '/');
  base.search = '';
  base.hash = '';
  return new URL(`api/${route}`, base);
}

/** The envelope of the gateway spec: numeric code 0 on success, a string code on failure, a message either way. */
function isEnvelope(body: unknown): body is { code: 0 | string; message: string; data?: unknown } {
  if (typeof body !== 'object' || body === null) return false;
  const { code, message } = body as { code?: unknown; message?: unknown };
  const success = code === 0 && (body as { data?: unknown }).data !== undefined;
  return typeof message === 'string' && (success || typeof code === 'string');
}

function describe(r: RouteInspection): string {
  const lines = [
    `routable: ${r.routable ? 'yes' : `no (${r.reason_code}${r.detail ? `: ${r.detail}` : ''})`}`,
    `request: ${r.request.protocol} ${r.request.operation}, model "${r.request.external_model}", access key #${r.access_key.id} "${r.access_key.name}"`,
  ];
  if (r.candidates.length === 0) lines.push('candidates: none (no Group maps this model)');
  for (const c of r.candidates) {
    const route = c.route.ok ? `${c.route.declared} -> ${c.route.effective}${c.route.wire ? ` via ${c.route.wire}` : ''}${routeLimits(c.route.restrictions, c.route.notes)}` : `refused ${c.route.reason_code}${c.route.note === undefined ? '' : ` (note ${c.route.note})`}`;
    const status = c.included ? `included, tier ${c.tier}, share ${Math.round((c.share_in_tier ?? 0) * 100)}%` : `excluded: ${c.reason_code}`;
    lines.push(`group #${c.group_id} "${c.group_name}" ${c.channel} priority ${c.priority} weight ${c.weight} upstream "${c.upstream_model ?? ''}": ${status}; route ${route}`);
    for (const k of c.credentials) lines.push(`  credential #${k.id} ${k.kind} ${k.state}: ${k.available ? 'available' : k.reason_code}${credentialDetail(k)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** What --json shows of a route's limits, in the summary too: restrictions and the notes behind them. */
function routeLimits(restrictions: readonly string[], notes: readonly number[]): string {
  const parts = [...(restrictions.length > 0 ? [restrictions.join(', ')] : []), ...(notes.length > 0 ? [`note${notes.length > 1 ? 's' : ''} ${notes.join(', ')}`] : [])];
  return parts.length > 0 ? ` (${parts.join('; ')})` : '';
}

/**
 * Until when a credential cools down, and why one is disabled: what an operator asks first. A
 * disabled credential keeps the end of an earlier cooldown, which says nothing about it.
 */
function credentialDetail(k: CredentialAvailability): string {
  if (k.reason_code === 'credential_cooldown' && k.cooldown_until !== null) return ` until ${k.cooldown_until}`;
  if (k.disabled_reason !== null) return ` (${k.disabled_reason})`;
  return '';
}
