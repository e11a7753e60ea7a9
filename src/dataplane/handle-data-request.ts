import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OperationEntry, ResourceEntry } from '../generated/index.ts';
import { routeTable, firstSegment, matchResourceName, matchRoute, type CompiledRoute, type RouteMatch, type RouteTarget } from '../handlers/compile-route-table.ts';
import type { StreamErrorStyle } from '../streaming/index.ts';
import type { LogRecord } from '../store/logs/index.ts';
import { computeCost, hasTokens, loggedUsage, requestStreamUsage } from '../usage/index.ts';
import { checkAccessKey } from './check-access-key.ts';
import { ConfigSnapshot, type Snapshot } from './config-snapshot.ts';
import { CredentialPool } from './credential-pool.ts';
import { DataPlaneError, dataPlaneFailure } from './data-plane-error.ts';
import type { DataPlaneDeps } from './data-plane-deps.ts';
import { forwardNative, type ForwardDeps } from './forward-native.ts';
import { clientDeadline } from './client-timeout.ts';
import { managedProxyUrl } from './managed-proxy-url.ts';
import { liveUpstreams } from './live-upstreams.ts';
import { newLogDraft } from './log-draft.ts';
import { noteChunkedRequestId } from './logged-request-id.ts';
import { attemptOrder, refusalFor } from './plan-candidates.ts';
import { noteRoute } from './note-route.ts';
import { RoutePlans } from './route-plans.ts';
import { prepareRequestBody, type PreparedBody } from './prepare-request-body.ts';
import { cappedModelName } from './body/index.ts';
import { withinModelCap } from './body/model-name-cap.ts';
import { presentedAccessKey } from './present-access-key.ts';
import { requestFeatures } from './request-features.ts';
import { heldConversationKey } from './held-conversation.ts';
import { CreatedObject } from './created-object.ts';
import { StreamOptionsRefusals } from './stream-options-refused.ts';
import { owesUsageTo, resourceKey, ResponseAffinity, type RememberedResponse } from './response-affinity.ts';
import { modelVisibleTo } from '../management/visibility.ts';
import type { AccessKeyRecord } from '../store/records.ts';
import { STORED_OBJECTS_KEPT } from '../store/stored-object-store.ts';
import { answersToRequestLimitsOnly, quotaMeterFor } from './quota-meter.ts';
import { modelBody, modelListBody, sendJson } from './serve-model-list.ts';
import { errorStyleOfMatch, listStyleOf, withResourceName } from './error-style-choice.ts';
import { bodyFramingRefusal } from './check-transfer-coding.ts';
import { USAGE_STYLE_BY_PROTOCOL } from './usage-style.ts';
import { forwardedQuery } from './forwarded-query.ts';
import { newRequestId } from './new-request-id.ts';
import { REFUSAL_REASONS } from '../engine/index.ts';
import { brokenBodyFraming } from './request-body-failure.ts';
import { NO_RETRY } from './retry-hints.ts';
import { splitTarget } from './split-request-target.ts';
import { sendGatewayError } from './send-gateway-error.ts';
import { allowAnyOrigin } from './allow-any-origin.ts';
import { answerPreflight, isPreflight, requestedMethod } from './answer-preflight.ts';

const STREAM_STYLE: Partial<Record<string, StreamErrorStyle>> = { 'x-responses': 'responses', 'x-messages': 'messages', 'x-generate': 'generate' };

/** Shared by requests without a query string; only ever read. */
const NO_QUERY = new URLSearchParams();
/** Reads that show a background response's usage once it has run (a cancelled one's too). */
const BACKGROUND_BILLING_READS: ReadonlySet<string> = new Set(['responses-retrieve', 'responses-cancel']);

export type DataPlaneHandler = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  /** Settles once the stored objects the log store kept are remembered again; rejects when they could not be read (then none are). */
  ready: Promise<void>;
};

/**
 * The data plane: every endpoint of the generated protocol table through one pipeline
 * (authenticate the AccessKey, check it, find the Groups, ask the engine, forward, log).
 */
export function createDataPlaneHandler(deps: DataPlaneDeps): DataPlaneHandler {
  const routes = routeTable();
  const pool = new CredentialPool(deps.store.credentials);
  const snapshot = new ConfigSnapshot(deps.store);
  const affinity = new ResponseAffinity(STORED_OBJECTS_KEPT, deps.logs.storedObjects);
  const ready = affinity.load();
  // The mount waits for it and reports a failure; a handler made without one must not end the process over it.
  ready.catch(() => undefined);
  const plans = new RoutePlans();
  const quota = quotaMeterFor(deps.logs);
  const { options } = deps;
  // What forwarding needs from the configuration, rebuilt only when the snapshot changes.
  let forwardDeps: { snap: Snapshot; deps: ForwardDeps } | undefined;
  const streamOptionsRefusals = new StreamOptionsRefusals();
  const forwardDepsFor = (snap: Snapshot): ForwardDeps => {
    if (forwardDeps?.snap === snap) return forwardDeps.deps;
    const { settings } = snap;
    const built: ForwardDeps = {
      upstream: deps.upstream,
      pool,
      credentialsOf: (groupId) => snap.credentialsByGroup.get(groupId) ?? [],
      credentialNow: (groupId, credentialId) => snapshot.credentialNow(groupId, credentialId, deps.clock()),
      now: deps.clock,
      idleTimeoutMs: options.streamIdleTimeoutMs ?? settings.stream_idle_timeout_seconds * 1000,
      headersTimeoutMs: options.headersTimeoutMs ?? settings.request_timeout_seconds * 1000,
      cooldowns: settings,
      maxAttempts: settings.max_attempts_per_request,
      proxyFor: (c, cred, now = settings) => managedProxyUrl(c.group.channel, cred, c.group, now),
      ...(deps.inFlight ? { inFlight: deps.inFlight } : {}),
      streamOptionsRefusals,
    };
    forwardDeps = { snap, deps: built };
    // Off the request that rebuilt the snapshot, and once for a burst of changes (disable verdicts, a window's cooldowns).
    if (!pruneScheduled) {
      pruneScheduled = true;
      setImmediate(forgetRemoved);
    }
    return built;
  };
  let pruneScheduled = false;
  // What deleted credentials, AccessKeys, proxies and upstreams left behind, for the configuration as it is now.
  const forgetRemoved = (): void => {
    pruneScheduled = false;
    // Only the current snapshot prunes: one taken by a request in flight may be older.
    const snap = snapshot.fresh();
    if (snap === undefined) return;
    pool.retain(snap);
    deps.upstream.retain(liveUpstreams(snap, pool.cachedLocations()));
    // The ids alone: copying every record (10,000 keys naming models) held the event loop 100 to 200 ms per change.
    quota.retain(() => deps.store.accessKeys.ids()).catch(() => undefined);
  };

  return Object.assign(async function handle(req: IncomingMessage, res: ServerResponse) {
    const started = deps.clock();
    const requestId = newRequestId(started);
    // One header read per request: only a browser's (it names its Origin) pays for CORS.
    if (req.headers.origin !== undefined) {
      if (isPreflight(req) && answeredPreflight(routes, req, res, requestId)) return;
      allowAnyOrigin(res);
    }
    const log = newLogDraft(requestId, started);
    noteChunkedRequestId(req, requestId);
    let errorStyle: OperationEntry['error_style'] = 'completions';
    let prepared: PreparedBody | undefined;
    // A recording key whose body was still arriving when it was routed: read again when the upload ends.
    let recordingAtUploadEnd: (() => Promise<boolean>) | undefined;
    deps.inFlight?.enter();
    try {
      const { path, search } = splitTarget(req);
      // Past the `?`: URLSearchParams skips one more, so `??key=` still names `key`.
      const query = search === undefined ? NO_QUERY : new URLSearchParams(search.slice(1));
      const presented = presentedAccessKey(req.headers, query);
      const match = withResourceName(routes, req.method ?? 'GET', path, req.headers, modelListHead(routes, req.method, path) ?? matchRoute(routes, req.method ?? 'GET', path), presented?.from);
      const unframed = bodyFramingRefusal(req, res);
      if (unframed !== undefined) {
        errorStyle = errorStyleOfMatch(match, req.headers, path, presented?.from);
        throw unframed;
      }
      const key = presented === undefined ? undefined : (snapshot.cachedAccessKey(presented.value) ?? (await snapshot.accessKey(presented.value)));
      if (!match.found) {
        errorStyle = errorStyleOfMatch(match, req.headers, path, presented?.from);
        // Not checked (the path is the refusal), but named, so that the key's logs show its wrong calls too.
        if (key) log.access_key_id = key.id;
        if (match.invalidParameter) throw new DataPlaneError('invalid_path_parameter');
        if (match.allowed.length > 0) {
          // The path is an endpoint's: the record names it, and the model its path or query names.
          if (match.near) {
            nameTarget(log, match.near);
            log.external_model = modelNamedBy(match.near, match.params, query);
          }
          throw new DataPlaneError('method_not_allowed', undefined, { allow: allowHeader(routes, match.allowed, path) });
        }
        if (match.servedUnder && match.near) throw new DataPlaneError('route_not_found', servedElsewhereDetail(req.method ?? 'GET', path, match.servedUnder, match.near));
        throw new DataPlaneError('route_not_found');
      }
      if (match.target.kind === 'model_list') {
        const snap = snapshot.fresh() ?? (await snapshot.current());
        const list = match.target.list;
        const style = listStyleOf(list, req.headers, presented?.from);
        errorStyle = style;
        nameTarget(log, match.target);
        // As for an operation: the model in the path is known before the key's checks, and a refusal's record names it.
        const model = list.answers === 'model' ? cappedModelName(match.params['model']!, 'path') : undefined;
        if (model !== undefined) log.external_model = model;
        if (!key) throw new DataPlaneError('access_key_invalid');
        log.access_key_id = key.id;
        checkAccessKey(key, null, started);
        if (model !== undefined) {
          const body = modelBody(style, model, key, snap);
          if (body === undefined) throw new DataPlaneError('model_not_visible');
          sendJson(res, 200, body, requestId, errorStyle);
        } else {
          sendJson(res, 200, modelListBody(style, key, snap, query), requestId, errorStyle);
        }
        log.status = 200;
        return;
      }

      const op = match.target.operation;
      errorStyle = op.error_style;
      log.protocol = op.protocol;
      log.operation = op.id;
      // A model in the path or query is known before the key's checks, and a refusal's record names it.
      if (op.model !== 'body') log.external_model = modelOf(op, undefined, match.params, query) ?? null;
      if (!key) throw new DataPlaneError('access_key_invalid');
      log.access_key_id = key.id;
      checkAccessKey(key, op.protocol, started);
      // An upgrade comes to the upgrade handler; a plain request here must not reach the upstream as one.
      if (op.body === 'websocket') throw new DataPlaneError('invalid_websocket_handshake', 'This endpoint opens a WebSocket session: send the request with Upgrade: websocket.');
      // Refused before the body is read: an answer format whose usage could not be read.
      const upstreamSearch = forwardedQuery(op.error_style, search, query);
      // Only a stored object's upkeep (a response's read, input items, cancellation, deletion, a
      // background response's billing read among them; a voice's read, update, deletion) answers
      // to the requests limits only: a passthrough or search may spend tokens upstream.
      const usesTokens = !answersToRequestLimitsOnly(op);
      if (key.quota) await quota.enforce(key, started, log, usesTokens);

      // The same setting bounds a silent request body as a silent stream.
      const bodyIdleMs = forwardDepsFor(snapshot.fresh() ?? (await snapshot.current())).idleTimeoutMs;
      prepared = await prepareRequestBody(req, op, key.record_request_body, options, bodyIdleMs);
      // Taken once the body is in, not before: a credential rotated or a Group deleted while it
      // uploaded must not be forwarded to as it was.
      const snap = snapshot.fresh() ?? (await snapshot.current());
      // The key too, by its presented value: one deleted, disabled, rotated or narrowed while it
      // uploaded is refused, or planned, recorded and logged as it is now.
      const reread = snapshot.currentAccessKey(presented!.value, key);
      // The same record is taken at once: no turn of the event loop for it.
      const current = reread === key ? key : await reread;
      if (prepared.streamed && current?.record_request_body) recordingAtUploadEnd = recordingOnceUploaded(req, snapshot, { presented: presented!.value, key: current }, deps.clock);
      if (current !== key) {
        if (!current?.record_request_body) prepared = unrecorded(prepared);
        if (prepared.cutShort) throw prepared.refusal;
        if (!current) throw new DataPlaneError('access_key_invalid');
        checkAccessKey(current, op.protocol, deps.clock());
        if (current.quota) await quota.enforce(current, deps.clock(), log, usesTokens);
      } else if (current.expires_at !== null && !prepared.cutShort) {
        // The same record, but its time may have run out while the body uploaded (a body cut short is refused for that, below).
        checkAccessKey(current, op.protocol, deps.clock());
      }
      // A body refused as read (invalid JSON, a malformed form) only now: the key as it is
      // decides first, and whether that body is recorded (for one cut short, only that).
      if (prepared.refusal) throw prepared.refusal;
      const model = modelOf(op, prepared.fields, match.params, query);
      if (op.model !== 'none' && model === undefined) throw new DataPlaneError('model_missing');
      log.external_model = model ?? null;

      const features = requestFeatures(op.stream, prepared.fields, query);
      const { candidates, included } = plans.plan(snap.groupsByModel, snap.groups, current, op.protocol, op.id, model, features);
      // A stored object (a response, a voice), named in the path or the body as the operation
      // declares, lives with the credential that created it. One property test for any other operation.
      const resource = op.resource;
      // A continuation names a previous response or a conversation (OpenAI takes only one of them).
      const conversationKey = resource === undefined ? undefined : heldConversationKey(resource, prepared.fields);
      const heldKey = resource === undefined ? undefined : (heldResourceKey(resource, match.params, prepared.fields) ?? conversationKey);
      const remembered = heldKey === undefined ? undefined : affinity.lookup(heldKey);
      if (remembered !== undefined) admitToHeld(remembered, current);
      // A background response's tokens are counted from the first read by its creator that reports them (its create reported none).
      const billsBackground = remembered !== undefined && owesUsageTo(remembered, current.id) && BACKGROUND_BILLING_READS.has(op.id);
      const routable = attemptOrder(included);
      const creating = resource?.creates === true ? new CreatedObject(affinity, resource.kind, { background: prepared.fields?.['background'] === true, externalModel: model ?? null, accessKeyId: current.id }) : undefined;
      // Only the Group that holds the response can answer for it: another one's "not found"
      // would be false, and so would the gateway's when that Group is gone or shut to the key.
      const ordered = remembered === undefined ? routable : routable.filter((c) => c.group.id === remembered.groupId);
      if (ordered.length === 0) {
        // Where a remembered object lives, only its holder's refusal counts (a channel note, a
        // native subset, no conversion), as for an id the gateway does not remember.
        const refusing = remembered === undefined ? candidates : candidates.filter((c) => c.group.id === remembered.groupId);
        const refusal = remembered !== undefined && refusing.length === 0 ? undefined : refusalFor(refusing, model);
        // The route of the Group whose refusal this is, as the engine resolved it for this model
        // (route inspection's `N/C -> converted`): the logs and usage attribute it to that Group.
        if (refusal?.refusedBy) noteRoute(log, refusal.refusedBy);
        // A holder gone, disabled or shut to the key recovers by itself no more: no SDK retry.
        if (remembered !== undefined && !refusal?.refusedBy) throw new DataPlaneError('no_available_credential', `The Group that holds this ${heldKey === conversationKey ? 'conversation' : resource!.kind} is not available to this key.`, NO_RETRY);
        throw new DataPlaneError(refusal!.code, refusal!.detail);
      }

      const result = await forwardNative(
        {
          req,
          res,
          requestId,
          op,
          params: match.params,
          search: upstreamSearch,
          body: prepared.body,
          candidates: ordered,
          streamRequested: features.stream === true,
          streamStyle: STREAM_STYLE[op.protocol] ?? 'completions',
          usageStyle: op.counts_tokens || billsBackground ? USAGE_STYLE_BY_PROTOCOL[op.protocol] : undefined,
          requestStreamUsage: op.protocol === 'x-completions' ? requestStreamUsage : undefined,
          onlyCredentialId: remembered?.credentialId,
          onCreatedId: creating === undefined ? undefined : (id, candidate, credential) => creating.named(id, candidate, credential),
          clientDeadline: clientDeadline(req.headers, started),
        },
        forwardDepsFor(snap),
      );
      fillFromResult(log, result);
      // The object a successful answer names is held by the credential that gave it (an error's body names none).
      if (resource !== undefined && result.candidate && result.credential && result.responseId && result.status < 300) {
        // A background create that streamed to its end reported (and counted) its usage already.
        if (creating !== undefined) creating.answered(result.responseId, result.candidate, result.credential, result.usage !== undefined && hasTokens(result.usage));
        else affinity.remember(resourceKey(resource.kind, result.responseId), result.candidate.group.id, result.credential.id);
      }
      // The credential that answered for a conversation holds it: later calls naming it go there.
      // Written only when the holder is new or another: not one stored-object write per turn.
      if (conversationKey !== undefined && result.candidate && result.credential && result.status < 300 && (remembered?.groupId !== result.candidate.group.id || remembered.credentialId !== result.credential.id)) {
        affinity.remember(conversationKey, result.candidate.group.id, result.credential.id);
      }
      const counted = op.counts_tokens || (billsBackground && result.usage !== undefined && hasTokens(result.usage) && affinity.claimUsage(heldKey!, current.id));
      if (counted && result.usage && result.candidate) {
        log.usage = loggedUsage(result.usage);
        log.cost = computeCost(result.usage, snap.pricesByModel.get(result.candidate.upstream_model ?? remembered?.upstreamModel ?? model ?? ''));
        // A read that bills a background response names no model itself: the usage goes under the one it was created with.
        if (!op.counts_tokens && remembered !== undefined) {
          log.external_model ??= remembered.externalModel;
          log.upstream_model ??= remembered.upstreamModel;
        }
      }
    } catch (err) {
      let failure = dataPlaneFailure(err);
      // node's parser refused the body and answered 400 itself: the client did not leave.
      if (failure.code === 'client_closed') failure = brokenBodyFraming(req) ?? failure;
      log.status = failure.status;
      log.error_code = failure.code;
      // A client that left while its body was read is as much an abort as one that left mid-answer.
      if (failure.code === 'client_closed') log.client_aborted = true;
      // An answer already started cannot take the error: the connection is cut.
      if (!sendGatewayError(res, errorStyle, failure, requestId) && !res.writableEnded) res.destroy();
    } finally {
      // A connection the shutdown cut looks to the relay like a client that left.
      if (log.error_code === 'client_closed' && deps.inFlight?.ended) cutByShutdown(log);
      if (recordingAtUploadEnd !== undefined && !(await recordingAtUploadEnd())) prepared = unrecorded(prepared!);
      const recorded = prepared?.recorded();
      if (recorded) log.request_body = recorded;
      log.timings.duration_ms = deps.clock() - started;
      try {
        quota.record(log);
        deps.logs.append(log);
      } finally {
        // Even if the record could not be written: a shutdown waits for every handler to leave.
        deps.inFlight?.leave();
      }
    }
  }, { ready });
}

/** The key a streamed body was routed under, and the value it was presented by. */
interface StreamedUnder {
  presented: string;
  key: AccessKeyRecord;
}

/**
 * Whether a body that was still arriving when it was routed is recorded, decided when its
 * upload ends (not when the answer does, which may be long after): by stillRecording then. An
 * upload that never ended (answered early, cut short) is decided when asked, at the request's end.
 */
function recordingOnceUploaded(req: IncomingMessage, snapshot: ConfigSnapshot, under: StreamedUnder, clock: () => number): () => Promise<boolean> {
  let decided: Promise<boolean> | undefined;
  const decide = (): Promise<boolean> => (decided ??= stillRecording(snapshot, under, clock()));
  if (req.readableEnded) void decide();
  else req.once('end', decide);
  return decide;
}

/**
 * Whether a body that was still arriving when it was routed is recorded: its key, read again
 * once the upload has ended, still records bodies, and is not deleted, rotated, disabled or
 * expired. A key that cannot be read then records none.
 */
async function stillRecording(snapshot: ConfigSnapshot, { presented, key }: StreamedUnder, now: number): Promise<boolean> {
  try {
    const current = await snapshot.currentAccessKey(presented, key);
    if (current === undefined || !current.record_request_body) return false;
    checkAccessKey(current, null, now);
    return true;
  } catch {
    return false;
  }
}

/** The body as read, but left out of the record: its key no longer records request bodies. The spool is still cleaned up. */
function unrecorded(body: PreparedBody): PreparedBody {
  return { ...body, recorded: () => void body.recorded() };
}

function cutByShutdown(log: LogRecord): void {
  log.status = REFUSAL_REASONS.shutting_down.status;
  log.error_code = 'shutting_down';
  log.client_aborted = false;
  for (const attempt of log.attempts) if (attempt.error_code === 'client_closed') attempt.error_code = 'shutting_down';
}

/**
 * HEAD of a model list is its GET without the body (node:http leaves the body out of a HEAD
 * answer): the gateway answers those itself. Other GET endpoints are forwarded, and an
 * upstream need not take HEAD, so they stay 405 for it.
 */
function modelListHead(routes: readonly CompiledRoute[], method: string | undefined, path: string): RouteMatch | undefined {
  if (method !== 'HEAD') return undefined;
  const match = matchRoute(routes, 'GET', path);
  return match.found && match.target.kind === 'model_list' ? match : undefined;
}

/**
 * A browser's preflight of a path the data plane serves, answered with the methods the path
 * takes (a 405's `Allow`; a passthrough path takes any, so the one asked for), and not logged:
 * it is no request of the API. False for a path that is no endpoint (it goes on to its 404) or
 * a passthrough preflight whose method is no token.
 */
function answeredPreflight(routes: readonly CompiledRoute[], req: IncomingMessage, res: ServerResponse, requestId: string): boolean {
  const { path } = splitTarget(req);
  const match = matchRoute(routes, 'OPTIONS', path);
  const methods = match.found ? requestedMethod(req) : match.allowed.length > 0 ? allowHeader(routes, match.allowed, path) : resourceNameMethods(routes, path);
  if (methods === undefined) return false;
  answerPreflight(req, res, requestId, methods);
  return true;
}

/**
 * The methods of a model list's resource name spanning segments (`GET /v1/models/org/name`,
 * withResourceName), HEAD its GET: served to a request in generate style, which its preflight
 * cannot show (it names the headers, without them). Another client's request gets its 404 then,
 * which the page can read.
 */
function resourceNameMethods(routes: readonly CompiledRoute[], path: string): string | undefined {
  return matchResourceName(routes, 'GET', path)?.found ? 'GET, HEAD' : undefined;
}

/** The methods a path takes: a model list's GET brings its HEAD (modelListHead), which the route table does not hold. */
function allowHeader(routes: readonly CompiledRoute[], allowed: readonly string[], path: string): string {
  return (modelListHead(routes, 'HEAD', path) === undefined ? allowed : [...allowed, 'HEAD']).join(', ');
}

/** Where the endpoint is (`POST /v1beta/models/{model}:generateContent is served under /v1beta, not /v1`), so that the client's API version can be set right. */
function servedElsewhereDetail(method: string, path: string, servedUnder: string, near: RouteTarget): string {
  const template = near.kind === 'operation' ? near.operation.path : near.list.path;
  return `${method} ${template} is served under ${servedUnder}, not ${firstSegment(path)}.`;
}

function nameTarget(log: LogRecord, target: RouteTarget): void {
  log.protocol = target.kind === 'operation' ? target.operation.protocol : 'models';
  log.operation = target.kind === 'operation' ? target.operation.id : target.list.id;
}

/** The model a refused request's path or query names, for its record; one over the cap is left out, and the refusal stands. */
function modelNamedBy(target: RouteTarget, params: Record<string, string> | undefined, query: URLSearchParams): string | null {
  if (params === undefined) return null;
  const value = target.kind === 'operation' ? rawModelOf(target.operation, undefined, params, query) : target.list.answers === 'model' ? params['model'] : undefined;
  return value !== undefined && withinModelCap(value) ? value : null;
}

/**
 * Refuses a key an object it may not reach, before anything is forwarded. Another key's object
 * is not found (the same answer wherever it is held or whether its Group is open to the key,
 * so ids cannot be probed); one created
 * under a model the key may not use is that model's refusal. An object learned from a read
 * names no creator and is open to any key, as one created before a restart.
 */
function admitToHeld(remembered: RememberedResponse, key: AccessKeyRecord): void {
  if (remembered.createdBy !== null && remembered.createdBy !== key.id) throw new DataPlaneError('resource_not_found');
  if (remembered.externalModel !== null && !modelVisibleTo(key, remembered.externalModel)) throw new DataPlaneError('model_not_visible', `The model "${remembered.externalModel}" this object was created with is not visible to this key.`);
}

/** The remembered-object key of the object the request names where its operation says (path parameter or body field), if it names one. */
function heldResourceKey(resource: ResourceEntry, params: Record<string, string>, fields: Record<string, unknown> | undefined): string | undefined {
  const id = resource.path_parameter !== undefined ? params[resource.path_parameter] : resource.body_field !== undefined ? fields?.[resource.body_field] : undefined;
  // A '/' (sent as %2F) names no stored object: no owner would be found, and an upstream that
  // decodes it would serve another path (`resp_X%2Finput_items`: another key's input items).
  if (resource.path_parameter !== undefined && typeof id === 'string' && id.includes('/')) throw new DataPlaneError('invalid_path_parameter', `The ${resource.path_parameter} contains "/".`);
  return typeof id === 'string' ? resourceKey(resource.kind, id) : undefined;
}

function modelOf(op: OperationEntry, fields: Record<string, unknown> | undefined, params: Record<string, string>, query: URLSearchParams): string | undefined {
  const value = rawModelOf(op, fields, params, query);
  return value === undefined ? undefined : cappedModelName(value, op.model === 'none' ? 'body' : op.model);
}

function rawModelOf(op: OperationEntry, fields: Record<string, unknown> | undefined, params: Record<string, string>, query: URLSearchParams): string | undefined {
  const value = op.model === 'body' ? fields?.['model'] : op.model === 'path' ? params['model'] : op.model === 'query' ? query.get('model') : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function fillFromResult(log: LogRecord, result: Awaited<ReturnType<typeof forwardNative>>): void {
  log.status = result.status;
  log.error_code = result.errorCode;
  log.attempts = result.attempts;
  log.attempt_count = result.attempts.length;
  log.client_aborted = result.clientAborted;
  if (result.ttfbAt !== undefined) log.timings.ttfb_ms = result.ttfbAt - log.timings.started_at;
  if (result.candidate) noteRoute(log, result.candidate);
  if (result.credential) log.credential_id = String(result.credential.id);
}
