import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type Server } from 'ws';
import { routeTable, matchRoute } from '../handlers/compile-route-table.ts';
import type { AttemptRecord, LogRecord } from '../store/logs/index.ts';
import type { CredentialView } from '../store/records.ts';
import { computeCost, loggedUsage, SessionUsageAccumulator } from '../usage/index.ts';
import { classifyUpstreamError, clientResponseHeaders, failedAtGateway, failedAtProxy, isClientCredentialSubprotocol, upstreamRequestHeaders, type OutgoingHeaders } from '../upstream/index.ts';
import { answerUpgrade } from './answer-upgrade.ts';
import { checkAccessKey } from './check-access-key.ts';
import { checkClientHandshake } from './check-client-handshake.ts';
import { quotaMeterFor } from './quota-meter.ts';
import { ConfigSnapshot } from './config-snapshot.ts';
import { CredentialPool, verdictFor } from './credential-pool.ts';
import { atGroupAddress } from './group-address.ts';
import { UnreachedTargets } from './unreached-targets.ts';
import { DataPlaneError, dataPlaneFailure } from './data-plane-error.ts';
import type { DataPlaneDeps } from './data-plane-deps.ts';
import { newLogDraft } from './log-draft.ts';
import { managedProxyUrl } from './managed-proxy-url.ts';
import { openUpstreamWebSocket, type UpstreamHandshake } from './open-upstream-websocket.ts';
import { attemptOrder, attemptTargetNow, planCandidates, refusalFor, type Candidate } from './plan-candidates.ts';
import { noteRoute } from './note-route.ts';
import { presentedAccessKey } from './present-access-key.ts';
import { proxyTunnelAgent } from './proxy-tunnel-agent.ts';
import { relayWebSocketSession, type RelaySession, type SessionEnd } from './relay-websocket-session.ts';
import { TRY_AGAIN_LATER } from './session-close-code.ts';
import { sessionUpstreamQuery } from './session-upstream-query.ts';
import { SessionWebSocket } from './session-websocket.ts';
import { renderErrorBody } from './render-error-body.ts';
import { errorStyleOfMatch } from './error-style-choice.ts';
import { withRequestId } from './request-id-headers.ts';
import { SESSION_USAGE_STYLE_BY_PROTOCOL } from './session-usage-style.ts';
import { withSetupModel } from './live-setup-model.ts';
import { setUpstreamCredential, upstreamUrl } from './upstream-target.ts';
import { maskUpstreamSecret } from './upstream-error-reply.ts';
import { judgeUpstreamAnswer } from './judge-upstream-answer.ts';
import { newRequestId } from './new-request-id.ts';
import { UpgradeClientWatch } from './watch-upgrade-client.ts';
import { upstreamSwitchingHeaders } from './upstream-switching-headers.ts';
import { cappedModelName } from './body/index.ts';
import { withinModelCap } from './body/model-name-cap.ts';
import { maskedOrUndecodable } from './undecodable-answer.ts';
import { followSessionKey, type AdmittedKey, type SessionPricing } from './follow-session-key.ts';
import { followSessionCredential, type SessionCredential } from './follow-session-credential.ts';
import { SessionTicker } from './session-ticker.ts';
import { droppedQueryName, refuseUnreadableFormat } from './forwarded-query.ts';
import { lastAnswerHint, NO_RETRY, replaceRetryHint } from './retry-hints.ts';
import { splitTarget } from './split-request-target.ts';

export interface UpgradeHandler {
  (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
  /**
   * Whether this is an upgrade the handler serves: a WebSocket one to a WebSocket route. Any
   * other (h2c, a WebSocket one elsewhere) is the plain HTTP request it also is (RFC 9110 §7.8).
   */
  serves(req: IncomingMessage): boolean;
  /**
   * Ends every relayed session (1001 to client and upstream) and calls off handshakes in
   * progress; resolves once each has written its log record. Upgraded sockets are not the
   * HTTP server's: its close() neither ends them nor finishes while they are open.
   */
  close(): Promise<void>;
}

/** Headers of the client's upgrade request that belong to its own handshake with the gateway (its subprotocols are offered anew). */
const CLIENT_HANDSHAKE_HEADERS = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol'];

/** An upstream's answer to the upgrade as the client may see it (no credentials, secret masked). */
interface UpstreamAnswer {
  status: number;
  headers: OutgoingHeaders;
  body: Buffer;
  candidate: Candidate;
  credential: CredentialView;
}

/**
 * WebSocket operations (x-live sessions, realtime transcription): authenticated and routed
 * like any request, then the client socket is joined to an upstream socket and frames pass
 * through both ways untouched (but for an x-live setup's model, `withSetupModel`). Refusals answer the upgrade with an HTTP error before joining;
 * an upstream that refuses the upgrade is failed over like an HTTP answer (401/403, 429, 5xx)
 * or passed on as it answered. A handshake that failed without an answer moves on only when
 * the operation is replay safe or the upstream provably saw nothing, as on the HTTP path. The
 * client's subprotocols are offered upstream, and the client is answered with the one the
 * upstream selected. A client that leaves before it is joined calls the upstream handshake off.
 */
export function createUpgradeHandler(deps: DataPlaneDeps): UpgradeHandler {
  const routes = routeTable();
  const pool = new CredentialPool(deps.store.credentials);
  const snapshot = new ConfigSnapshot(deps.store);
  const quota = quotaMeterFor(deps.logs);
  // How often an open session's followers look at its key, credential and Group again.
  const ticker = new SessionTicker(1000);
  // What each client's 101 carries: the subprotocol its upstream selected, the end-to-end headers of the upstream's 101, and the request id.
  const joining = new WeakMap<IncomingMessage, { protocol: string; headers: OutgoingHeaders }>();
  // Pings and pongs are the session's to relay (relayWebSocketSession), not answered here.
  const wss: Server<typeof SessionWebSocket> = new WebSocketServer({ WebSocket: SessionWebSocket, noServer: true, autoPong: false, maxPayload: deps.options.sessionMessageMaxBytes, handleProtocols: (_offered, req) => joining.get(req)?.protocol || false });
  wss.on('headers', (lines: string[], req: IncomingMessage) => {
    const headers = joining.get(req)?.headers;
    if (headers === undefined) return;
    // One line per value of a header given as several.
    for (const [name, value] of Object.entries(headers)) for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  });
  const handshakes = new Set<UpstreamHandshake>();
  const sessions = new Set<RelaySession>();
  const inFlight = new Set<Promise<void>>();
  let closing = false;

  async function serve(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const started = deps.clock();
    const requestId = newRequestId(started);
    const log = newLogDraft(requestId, started);
    let style: 'completions' | 'messages' | 'generate' = 'completions';
    // The HTTP server drops its error listener from an upgraded socket; a client reset while the
    // upstream is being reached would otherwise be an uncaught error.
    socket.on('error', () => {});
    const watch = new UpgradeClientWatch(socket);
    try {
      // Path and query as the HTTP path reads them: the target as sent, never parsed as a URL
      // (node accepts targets a URL cannot be, `*:abc`). Past the `?`, URLSearchParams skips one
      // more, so `??key=...` names the key on both, and is removed on both.
      const { path, search = '' } = splitTarget(req);
      const query = new URLSearchParams(search.slice(1));
      const match = matchRoute(routes, 'GET', path);
      const presented = presentedAccessKey(req.headers, query);
      if (!match.found || match.target.kind !== 'operation' || match.target.operation.body !== 'websocket') {
        // Only where the caller serves every upgrade here (the server serves these as plain requests: `serves`).
        style = errorStyleOfMatch(match, req.headers, path, presented?.from);
        throw new DataPlaneError('route_not_found');
      }
      const op = match.target.operation;
      style = op.error_style;
      if (closing) throw new DataPlaneError('shutting_down');
      log.protocol = op.protocol;
      log.operation = op.id;
      const given = query.get('model') || undefined;
      // As on HTTP: a refusal's record names the model the query gives (one over the cap is left out, and refused below).
      if (given !== undefined && withinModelCap(given)) log.external_model = given;
      const protocols = checkClientHandshake(req);
      // The client's own credentials (its key, an OAuth token it sent) never go upstream, nor, in
      // the generate style, a response filter that would hide the usage (as on the HTTP path).
      const dropped = droppedQueryName(op.error_style);
      // No subprotocol carrying a key or an account scope travels upstream, the client's AccessKey
      // or any other key there (the upstream would judge it instead of the gateway's credential),
      // nor an organization or project (401 mismatched_organization would disable the credential);
      // the key is read only where presentedAccessKey looks.
      const offered = protocols.filter((p) => !isClientCredentialSubprotocol(p) && (presented === undefined || !p.includes(presented.value)));
      const key = presented === undefined ? undefined : await snapshot.accessKey(presented.value);
      if (!key) throw new DataPlaneError('access_key_invalid');
      log.access_key_id = key.id;
      checkAccessKey(key, op.protocol, started);
      refuseUnreadableFormat(op.error_style, query);
      await quota.enforce(key, started, log);
      if (given === undefined) throw new DataPlaneError('model_missing', 'Pass the model as the `model` query parameter.');
      const model = cappedModelName(given, 'query');
      log.external_model = model;
      const snap = await snapshot.current();
      pool.retain(snap);
      const candidates = planCandidates({ protocol: op.protocol, operation: op.id, model, key, groups: snap.groupsByModel.get(model) ?? [] });
      const ordered = attemptOrder(candidates.filter((c) => c.included));
      if (ordered.length === 0) {
        const r = refusalFor(candidates, model);
        if (r.refusedBy) noteRoute(log, r.refusedBy);
        throw new DataPlaneError(r.code, r.detail);
      }
      const settings = snap.settings;
      const handshakeTimeoutMs = deps.options.headersTimeoutMs ?? settings.request_timeout_seconds * 1000;
      const answerIdleTimeoutMs = deps.options.streamIdleTimeoutMs ?? settings.stream_idle_timeout_seconds * 1000;
      let lastAnswer: UpstreamAnswer | undefined;
      let lastFailure: { error: DataPlaneError; candidate: Candidate; credential: CredentialView } | undefined;
      /** The credentials this upgrade's verdicts cooled down or disabled, as they left them. */
      const judgedCredentials: CredentialView[] = [];
      // As forward-native: the last answer's retry headers are the pool's hint when none is left usable.
      const groups = ordered.map((c) => c.group);
      const credentialsOf = (id: number) => snap.credentialsByGroup.get(id) ?? [];
      const hint = () => lastAnswerHint(pool, groups, credentialsOf, judgedCredentials, log.attempts.length, deps.clock());
      // As forward-native: a managed proxy that failed at the gateway's side, or the Group's address
      // reached through the same proxy (or none), is not tried again for another credential.
      const unreached = new UnreachedTargets();
      attempts: for (const routed of ordered) {
        unreached.nextGroup();
        for (const listed of pool.usable(routed.group, credentialsOf(routed.group.id), deps.clock())) {
          if (log.attempts.length >= settings.max_attempts_per_request || watch.gone) break attempts;
          // As forward-native: a credential or Group deleted, disabled, rotated or changed during an
          // earlier handshake is not tried as it was, and the global proxy is taken as it is now.
          const configured = await attemptTargetNow(routed, listed, log.attempts.length === 0, () => snapshot.credentialNow(routed.group.id, listed.id, deps.clock()));
          if (configured === undefined) continue;
          const { candidate, credential } = configured;
          const proxy = managedProxyUrl(candidate.group.channel, credential, candidate.group, configured.settings ?? settings);
          if (unreached.behindFailedProxy(proxy)) continue;
          const access = await pool.accessOf(credential);
          if (access === undefined) continue;
          if (unreached.atFailedGroupAddress(access, candidate.group, proxy)) continue;
          const { secret } = access;
          if (closing) throw new DataPlaneError('shutting_down');
          if (watch.gone) break attempts;
          const headers = upstreamRequestHeaders(req.headers);
          for (const h of CLIENT_HANDSHAKE_HEADERS) delete headers[h];
          setUpstreamCredential(headers, candidate.group.channel, op.protocol, secret);
          // The credential's own address when it has one, else the Group's.
          const address = access.baseUrl ?? candidate.group.base_url ?? '';
          const versionless = candidate.group.versionless_api === true;
          const attempt: AttemptRecord = { credential_id: String(credential.id), group_id: String(candidate.group.id), status: null, error_code: null };
          log.attempts.push(attempt);
          let target: string;
          try {
            target = upstreamUrl(address, op.upstream_path, match.params, candidate.upstream_model, sessionUpstreamQuery(search, dropped, candidate.upstream_model), versionless).replace(/^http/, 'ws');
          } catch (error) {
            // The Group maps the model to a name a URL cannot carry (model_mapping_unusable): nothing
            // was sent and no credential is at fault; the next Group's mapping may be usable.
            if (!(error instanceof DataPlaneError)) throw error;
            attempt.error_code = error.code;
            lastFailure = { error, candidate, credential };
            continue attempts;
          }
          let handshake: UpstreamHandshake;
          try {
            handshake = openUpstreamWebSocket(target, offered, headers, { agent: proxy === undefined ? undefined : proxyTunnelAgent(proxy, target.startsWith('wss:')), handshakeTimeoutMs, answerIdleTimeoutMs, maxPayload: deps.options.sessionMessageMaxBytes });
          } catch (error) {
            // An unusable stored proxy URL or upstream address: nothing was sent, so another credential may be tried.
            const failure = classifyUpstreamError(error);
            const misconfigured = failedAtGateway(failure);
            attempt.error_code = misconfigured ? failure.kind : 'upstream_connect_failed';
            if (failedAtProxy(failure)) unreached.proxyFailed(proxy);
            lastFailure = { error: misconfigured ? new DataPlaneError(failure.kind) : new DataPlaneError('upstream_unreachable', '(upstream_connect_failed)'), candidate, credential };
            continue;
          }
          handshakes.add(handshake);
          watch.point(handshake.abort);
          const outcome = await handshake.outcome;
          watch.point(undefined);
          handshakes.delete(handshake);
          if (closing) {
            if (outcome.kind === 'open') outcome.socket.terminate();
            throw new DataPlaneError('shutting_down');
          }
          if (watch.gone) {
            // Called off (or answered to no one) because the client left: no fault of the credential.
            if (outcome.kind === 'open') outcome.socket.terminate();
            attempt.error_code = 'client_closed';
            noteAttemptRoute(log, candidate, credential);
            throw new DataPlaneError('client_closed');
          }
          if (outcome.kind === 'failed' && outcome.gatewaySide !== undefined) {
            // As forward-native: the proxy in front of the credential failed, not the credential; nothing was sent.
            attempt.error_code = outcome.code;
            if (failedAtProxy({ kind: outcome.gatewaySide })) unreached.proxyFailed(proxy);
            lastFailure = { error: new DataPlaneError(outcome.gatewaySide), candidate, credential };
            continue;
          }
          if (outcome.kind === 'failed') {
            attempt.error_code = outcome.code;
            // As forward-native: an answer overdue is no fault of the credential, nor one for another to retry.
            if (outcome.timedOut) {
              noteAttemptRoute(log, candidate, credential);
              throw new DataPlaneError('upstream_timeout', `(${outcome.code})`);
            }
            // As forward-native: a connection that never opened at the Group's address (a refused
            // certificate too) passes over the Group's other credentials there.
            if (outcome.neverConnected === true && atGroupAddress(access, candidate.group)) unreached.groupAddressFailed(proxy);
            // As forward-native: a refused certificate is no credential's fault; no verdict, and nothing was sent.
            if (outcome.certificateRefused === true) {
              lastFailure = { error: new DataPlaneError('upstream_unreachable', `(${outcome.code})`, NO_RETRY), candidate, credential };
              continue;
            }
            judgedCredentials.push(await pool.apply(credential, access, verdictFor(null, undefined, settings, deps.clock()), deps.clock()));
            // As forward-native: a connect timeout is answered as a timeout when it is the last failure.
            lastFailure = { error: new DataPlaneError(outcome.code === 'upstream_connect_timeout' ? 'upstream_timeout' : 'upstream_unreachable', `(${outcome.code})`), candidate, credential };
            // As forward-native: an operation unsafe to replay moves on only when the upstream provably saw nothing.
            if (!op.replay_safe && !outcome.notDelivered) break attempts;
            continue;
          }
          attempt.status = outcome.kind === 'answered' ? outcome.status : 101;
          noteAttemptRoute(log, candidate, credential);
          if (outcome.kind === 'no_subprotocol') {
            // The upstream declined what the client offered: nothing against the credential, nor for another to try.
            attempt.error_code = 'subprotocol_not_accepted';
            throw new DataPlaneError('subprotocol_not_accepted');
          }
          if (outcome.kind === 'invalid_handshake') {
            // The upstream answered and broke the protocol: nothing against the credential, and another would not mend the upstream.
            attempt.error_code = 'upstream_handshake_invalid';
            throw new DataPlaneError('upstream_handshake_invalid', `(${outcome.detail})`);
          }
          if (outcome.kind === 'answered') {
            attempt.error_code = `upstream_${outcome.status}`;
            const headers = clientResponseHeaders(outcome.headers, true);
            // An answer the gateway cannot decode to mask: this attempt's failure, weighed by its status all the same.
            const answer = maskedOrUndecodable<UpstreamAnswer>(attempt, () => ({ status: outcome.status, headers, body: maskUpstreamSecret(headers, outcome.body, secret), candidate, credential }));
            // As forward-native: the body in Google's error shape (the live operation's), or an OpenAI 401/403's code, is judged too.
            const judged = judgeUpstreamAnswer(outcome.status, outcome.headers, op, answer instanceof DataPlaneError ? undefined : answer.body, req.headers, settings, deps.clock());
            if (judged.failsOver) judgedCredentials.push(await pool.apply(credential, access, judged.verdict, deps.clock()));
            // As forward-native: an operation unsafe to replay moves on only when the upstream provably rejected it before processing.
            if (judged.failsOver && (op.replay_safe || judged.rejectedBeforeProcessing)) {
              if (answer instanceof DataPlaneError) lastFailure = { error: answer, candidate, credential };
              else lastAnswer = answer;
              continue;
            }
            if (answer instanceof DataPlaneError) throw withHint(answer, hint());
            return passOn(socket, log, answer, requestId, hint(), deps.clock());
          }
          log.status = 101;
          joining.set(req, { protocol: outcome.socket.protocol, headers: withRequestId(upstreamSwitchingHeaders(outcome.headers, secret), requestId) });
          const usageStyle = op.counts_tokens ? SESSION_USAGE_STYLE_BY_PROTOCOL[op.protocol] : undefined;
          const pricing = { usage: usageStyle === undefined ? undefined : new SessionUsageAccumulator(usageStyle), price: snap.pricesByModel.get(candidate.upstream_model ?? model) };
          // An x-live setup names the model too: the upstream gets the one the session was routed and priced for.
          const firstClientMessage = op.protocol === 'x-live' ? (message: Buffer) => withSetupModel(message, candidate.upstream_model ?? model) : undefined;
          const end = await relay(req, socket, head, outcome.socket, log, pricing, secret, answerIdleTimeoutMs, { key, presented: presented!.value, protocol: op.protocol, model, group: candidate.group, startedAt: started }, { groupId: candidate.group.id, credential, access, address, versionless }, firstClientMessage);
          if (end?.upstreamErrorCode !== undefined) {
            // The attempt holds the code the upstream failed the session with, as it holds a failed answer's status.
            attempt.error_code = `upstream_close_${end.upstreamErrorCode}`;
            // "Try Again Later" is the upstream's 503: the credential cools down as for one.
            if (end.upstreamErrorCode === TRY_AGAIN_LATER) await pool.apply(credential, access, verdictFor(503, undefined, settings, deps.clock()), deps.clock());
          }
          return;
        }
      }
      if (watch.gone) {
        const last = lastAnswer ?? lastFailure;
        if (last) noteAttemptRoute(log, last.candidate, last.credential);
        throw new DataPlaneError('client_closed');
      }
      if (lastAnswer) return passOn(socket, log, lastAnswer, requestId, hint(), deps.clock());
      if (lastFailure) {
        noteAttemptRoute(log, lastFailure.candidate, lastFailure.credential);
        throw withHint(lastFailure.error, hint());
      }
      // As forward-native: the record names the route it would have taken, with no credential.
      noteRoute(log, ordered[0]!);
      throw new DataPlaneError('no_available_credential', pool.noCredentialDetail(groups, credentialsOf, deps.clock()), pool.retryHeaders(groups, credentialsOf, deps.clock()));
    } catch (err) {
      const failure = dataPlaneFailure(err);
      log.status = failure.status;
      log.error_code = failure.code;
      if (failure.code === 'client_closed') {
        // No one to answer; its half of the connection is closed already.
        log.client_aborted = true;
        socket.destroy();
      } else {
        const body = Buffer.from(renderErrorBody(style, failure.status, failure.code, failure.message, requestId));
        answerUpgrade(socket, failure.status, withRequestId({ 'content-type': 'application/json', ...failure.headers }, requestId), body);
      }
    } finally {
      watch.stop();
      log.attempt_count = log.attempts.length;
      log.timings.duration_ms = deps.clock() - started;
      quota.record(log);
      deps.logs.append(log);
    }
  }

  /**
   * Completes the client's upgrade and relays frames until either side closes; the session's
   * usage, up to the upstream's close, goes to its log record. Undefined: the client left before it was joined.
   */
  async function relay(req: IncomingMessage, socket: Duplex, head: Buffer, upstream: SessionWebSocket, log: LogRecord, pricing: SessionPricing, secret: string, upstreamIdleMs: number, admitted: AdmittedKey, used: SessionCredential, firstClientMessage: ((message: Buffer) => Buffer | undefined) | undefined): Promise<SessionEnd | undefined> {
    const client = await completeUpgrade(wss, req, socket, head);
    if (!client) {
      upstream.terminate();
      log.status = 499;
      log.error_code = 'client_closed';
      log.client_aborted = true;
      return undefined;
    }
    log.timings.ttfb_ms = deps.clock() - log.timings.started_at;
    // The session's first end names it in the record (`finish`): a follower's end once the session has ended changes nothing.
    const follower = followSessionKey({ snapshot, quota, ticker, clock: deps.clock }, admitted, pricing, (code) => session.endForPolicy(code));
    const credentialFollower = followSessionCredential({ snapshot, ticker, accessOf: (view) => pool.accessOf(view) }, used, (code) => session.endWithdrawn(code));
    // An HTTP server's upgrade socket is a net.Socket (on https a TLSSocket, which is one too).
    const session = relayWebSocketSession(client, socket as Socket, upstream, log, pricing.usage, secret, deps.options.sessionHeartbeatMs, upstreamIdleMs, follower.onUsage, firstClientMessage);
    void session.ended.then(() => {
      follower.stop();
      credentialFollower.stop();
    });
    sessions.add(session);
    void session.closed.then(() => sessions.delete(session));
    if (closing) session.goAway();
    const end = await session.ended;
    const usage = pricing.usage?.result();
    if (usage !== undefined) {
      log.usage = loggedUsage(usage);
      log.cost = computeCost(usage, pricing.price);
    }
    return end;
  }

  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const served = serve(req, socket, head);
    inFlight.add(served);
    return served.finally(() => inFlight.delete(served));
  };
  return Object.assign(upgrade, {
    serves(req: IncomingMessage): boolean {
      if (!upgradesTo(req, 'websocket')) return false;
      const match = matchRoute(routes, 'GET', splitTarget(req).path);
      return match.found && match.target.kind === 'operation' && match.target.operation.body === 'websocket';
    },
    async close() {
      closing = true;
      for (const handshake of handshakes) handshake.abort();
      for (const session of sessions) session.goAway();
      // Sessions joined while this waits are sent away as they join (`closing`).
      while (inFlight.size > 0 || sessions.size > 0) await Promise.all([...inFlight, ...[...sessions].map((s) => s.closed)]);
    },
  });
}

/** Whether the request's Upgrade header offers `protocol` (RFC 9110 §7.8: a list of protocol[/version]). */
function upgradesTo(req: IncomingMessage, protocol: string): boolean {
  return (req.headers.upgrade ?? '').split(',').some((p) => p.trim().split('/')[0]!.toLowerCase() === protocol);
}

/**
 * Passes an upstream's non-101 answer to the client as the upstream sent it, with `hint` for its
 * retry headers when given; its status line, sent `now`, is the first byte (none to a client gone).
 */
function passOn(socket: Duplex, log: LogRecord, answer: UpstreamAnswer, requestId: string, hint: Readonly<Record<string, string>> | undefined, now: number): void {
  noteAttemptRoute(log, answer.candidate, answer.credential);
  log.status = answer.status;
  log.error_code = `upstream_${answer.status}`;
  if (!socket.destroyed && socket.writable) log.timings.ttfb_ms = now - log.timings.started_at;
  answerUpgrade(socket, answer.status, withRequestId(replaceRetryHint(answer.headers, hint), requestId), answer.body);
}

/**
 * The gateway's last failure with `hint` for its retry headers (each of its errors has headers
 * of its own), as on HTTP (answerTransportFailure): one that tells the SDKs not to retry keeps that.
 */
function withHint(error: DataPlaneError, hint: Readonly<Record<string, string>> | undefined): DataPlaneError {
  if (error.headers['x-should-retry'] !== 'false') replaceRetryHint(error.headers, hint);
  return error;
}

function noteAttemptRoute(log: LogRecord, candidate: Candidate, credential: CredentialView): void {
  noteRoute(log, candidate);
  log.credential_id = String(credential.id);
}

/** The client's side of the session, or undefined when the client left before it was joined. */
function completeUpgrade(wss: Server<typeof SessionWebSocket>, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<SessionWebSocket | undefined> {
  if (socket.destroyed) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    // ws answers a malformed handshake itself and then never calls back.
    socket.once('close', () => resolve(undefined));
    // ws writes its 101 as a string in the socket's default encoding, the upstream's header
    // values among its lines (a character per byte, as node's parser read them): in latin1 they
    // go as the upstream sent them, as node's writeHead sends an HTTP answer's. Its frames are buffers.
    socket.setDefaultEncoding('latin1');
    wss.handleUpgrade(req, socket, head, (client) => {
      socket.setDefaultEncoding('utf8');
      resolve(client);
    });
  });
}
