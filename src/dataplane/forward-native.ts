import type { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OperationEntry } from '../generated/index.ts';
import type { StreamErrorStyle } from '../streaming/index.ts';
import { CONNECTION_LOST, classifyUpstreamError, failedAtGateway, failedAtProxy, neverConnected, upstreamRequestHeaders, type OutgoingHeaders, type UpstreamClient, type UpstreamExchange, type UpstreamReply } from '../upstream/index.ts';
import { asksStreamUsage, type TokenUsage, type UsageStyle } from '../usage/index.ts';
import type { AttemptRecord } from '../store/logs/index.ts';
import type { CredentialView, Settings } from '../store/records.ts';
import { attemptTargetNow, type Candidate } from './plan-candidates.ts';
import type { ConfiguredCredential } from './config-snapshot.ts';
import { verdictFor, type CredentialAccess, type CredentialPool, type VerdictCooldowns } from './credential-pool.ts';
import { atGroupAddress } from './group-address.ts';
import { UnreachedTargets } from './unreached-targets.ts';
import type { CredentialTurn } from './credential-rotation.ts';
import { REFUSAL_REASONS } from '../engine/index.ts';
import { DataPlaneError } from './data-plane-error.ts';
import { lastAnswerHint, NO_RETRY, replaceRetryHint } from './retry-hints.ts';
import { jsonAttemptBody, bodyModelMapping, type BodyModelMapping } from './body/index.ts';
import { deliverUpstreamResponse, type DeliveryOptions, type DeliveryOutcome } from './deliver-upstream-response.ts';
import type { InFlightRequests } from './in-flight-requests.ts';
import { judgedByBody, judgeUpstreamAnswer } from './judge-upstream-answer.ts';
import { brokenBodyFraming, requestBodyFailure } from './request-body-failure.ts';
import { isReadableError, maskedUpstreamError, readUpstreamError, sendUpstreamError, type UpstreamErrorReply } from './upstream-error-reply.ts';
import { setUpstreamCredential, upstreamTarget } from './upstream-target.ts';
import { RequestWatch } from './watch-client.ts';
import { sendGatewayError } from './send-gateway-error.ts';
import { maskedOrUndecodable, undecodableAnswer } from './undecodable-answer.ts';
import { attemptHeadersTimeout } from './client-timeout.ts';
import { resumedFirstSequence } from './relay/resumed-stream.ts';
import { streamEndStyle } from './relay/final-stream-event.ts';
import { boundCredentials } from './bound-credential.ts';
import { refusesStreamOptions, type StreamOptionsRefusals } from './stream-options-refused.ts';

/** A JSON body read whole: its bytes, as parsed, and whether `"model"` occurs in it twice. */
interface JsonBody {
  kind: 'json';
  raw: Buffer;
  value: Record<string, unknown>;
  repeatsModel: boolean;
}

/** The request body as the data plane holds it: parsed JSON it may rewrite, or a one-shot stream. */
export type ForwardBody =
  | { kind: 'none' }
  | JsonBody
  | {
      kind: 'stream';
      /** open() may be called again for another attempt (a spooled body); else the body is sent once. */
      replayable?: boolean;
      /** `asksStreamUsage`: whether this attempt's upstream is asked for a completions stream's usage (its channel's `stream_usage`). */
      open(upstreamModel: string | null, listed?: BodyModelMapping, asksStreamUsage?: boolean): Promise<{ stream: Readable; length?: number; addedStreamUsage?: boolean }>;
    };

export interface ForwardInput {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  op: OperationEntry;
  params: Record<string, string>;
  /** The client's query string (`?...` or empty) without its credential, as encoded. */
  search: string;
  body: ForwardBody;
  /** Included candidates in the order to try them. */
  candidates: readonly Candidate[];
  streamStyle: StreamErrorStyle;
  usageStyle: UsageStyle | undefined;
  /**
   * The request asked for a stream: its route features' stream flag, read from any body (one
   * spooled or a form's fields too), or an operation that always streams.
   */
  streamRequested: boolean;
  /** Adds `stream_options.include_usage` for completions streams; true when the client did not ask. */
  requestStreamUsage?: (body: Record<string, unknown>) => boolean;
  /**
   * The only credential to try (the one that holds the response or voice the request refers
   * to): an upstream stores them per key, so another credential's answer would be a false 404.
   */
  onlyCredentialId?: number;
  /**
   * A created object's id as the answer's stream names it (`response.created`), with the
   * credential that answered: the client holds the id from then on, long before a stream ends.
   */
  onCreatedId?: (id: string, candidate: Candidate, credential: CredentialView) => void;
  /** When the client's SDK gives up, less a margin (clientDeadline), if it sent its timeout: it bounds every attempt. */
  clientDeadline?: number | undefined;
}

export interface ForwardDeps {
  upstream: UpstreamClient;
  pool: CredentialPool;
  /** The Group's credentials as the configuration snapshot the request was routed by holds them. */
  credentialsOf(groupId: number): readonly CredentialView[];
  /**
   * The credential and its Group as the configuration holds them now, or undefined when it may
   * no longer be tried (it or its Group deleted or disabled, or it not active): for attempts after the first.
   */
  credentialNow(groupId: number, credentialId: number): Promise<ConfiguredCredential | undefined>;
  now(): number;
  idleTimeoutMs: number;
  headersTimeoutMs: number;
  /** The cooldowns of verdicts without the upstream's own hint: credential_cooldown_seconds, server_error_cooldown_seconds. */
  cooldowns: VerdictCooldowns;
  maxAttempts: number;
  /** `settings`: as read for an attempt after another's wait; the request's otherwise. */
  proxyFor(candidate: Candidate, credential: CredentialView, settings?: Settings): string | undefined;
  inFlight?: InFlightRequests;
  /** Credentials whose upstream refuses the stream_options the gateway adds. */
  streamOptionsRefusals: StreamOptionsRefusals;
}

export interface ForwardResult {
  status: number;
  candidate: Candidate | undefined;
  credential: CredentialView | undefined;
  attempts: AttemptRecord[];
  usage: TokenUsage | undefined;
  errorCode: string | null;
  clientAborted: boolean;
  responseId: string | undefined;
  ttfbAt: number | undefined;
}

/** Why an attempt after the first was not made: the client's SDK would give up before it could be answered. */
const CLIENT_DEADLINE_DETAIL = "(too little of the client's x-stainless-timeout left for another attempt)";

/**
 * How many times a request is sent again after a stale pooled connection: another idle
 * connection in the pool may be stale too.
 */
const STALE_RENEWALS = 2;

const CLOSED_WHILE_SENDING_DETAIL = '(upstream_closed_while_sending: the upstream closed the connection before the whole request body was sent; it may have refused the body, for example as too large)';

interface Failed extends UpstreamErrorReply {
  candidate: Candidate;
  credential: CredentialView;
}

/**
 * Native forwarding with failover: credentials of a Group round-robin, then the next Group,
 * while nothing has been sent to the client and the operation may be replayed (or the
 * upstream provably rejected it before processing). A request bound to a stored response
 * tries its one credential only. The last upstream error is passed on as the upstream sent it,
 * but for its retry headers, which may be the pool's hint instead (lastAnswerHint).
 *
 * Most requests take one attempt that succeeds: that attempt runs here straight through,
 * outside the failover loop (measured in interleaved bench runs: +0.015 of the floor's
 * throughput in both scenarios). Anything else (another body kind, a single credential to
 * use or one to decrypt first, a failed or unusual answer) goes to the failover loop, which
 * takes over a first attempt already made as if it had made it itself.
 */
export async function forwardNative(input: ForwardInput, deps: ForwardDeps): Promise<ForwardResult> {
  // One watch on the client for the whole request, the first attempt and the failover loop alike.
  const watch = new RequestWatch(input.req.socket);
  try {
    const { body } = input;
    const candidate = input.candidates[0];
    if (candidate === undefined || body.kind !== 'json' || input.onlyCredentialId !== undefined || deps.maxAttempts < 1 || clientGone(input) || deps.inFlight?.ended) return await forwardWithFailover(input, deps, watch, undefined);
    const credentials = deps.pool.usable(candidate.group, deps.credentialsOf(candidate.group.id), deps.now());
    const credential = credentials.at(0);
    const access = credential === undefined ? undefined : deps.pool.cachedAccess(credential);
    if (credential === undefined || access === undefined) return await forwardWithFailover(input, deps, watch, { candidate, credentials, sent: undefined });
    const attempt = newAttempt(candidate, credential);
    const result = newResult([attempt]);
    let exchange: UpstreamExchange | undefined;
    const abortExchange = () => exchange?.abort();
    let request: AttemptRequest;
    try {
      request = jsonAttemptRequest(input, body, candidate, access.secret, !deps.streamOptionsRefusals.has(candidate.group, credential));
      const headersTimeoutMs = attemptHeadersTimeout(deps.headersTimeoutMs, input.clientDeadline, deps.now, true)!;
      exchange = sendAttempt(input, deps, candidate, credential, access, request, headersTimeoutMs);
    } catch {
      // Not started: the failover loop makes the attempt again and treats the failure as it does.
      return await forwardWithFailover(input, deps, watch, { candidate, credentials, sent: undefined });
    }
    watch.point(abortExchange);
    let upstream: UpstreamReply;
    try {
      upstream = await exchange.reply;
    } catch (error) {
      watch.point(undefined);
      return await forwardWithFailover(input, deps, watch, { candidate, credentials, sent: { credential, access, attempt, request, exchange, got: { error } } });
    }
    watch.point(undefined);
    // Every error or redirect answer (failover, or the secret to mask in its body) is the loop's to judge.
    if (upstream.status >= 300 || clientGone(input)) {
      return await forwardWithFailover(input, deps, watch, { candidate, credentials, sent: { credential, access, attempt, request, exchange, got: { reply: upstream } } });
    }
    attempt.status = upstream.status;
    const outcome = await deliverUpstreamResponse(upstream, deliveryOptions(input, deps, result, request.dropUsageChunk, watch.point, candidate, credential), access.secret);
    return recordDelivery(result, attempt, candidate, credential, upstream.status, outcome);
  } finally {
    watch.stop();
  }
}

/** A first attempt handed to the failover loop, with the reply or the transport error it got. */
interface SentAttempt {
  credential: CredentialView;
  access: CredentialAccess;
  attempt: AttemptRecord;
  request: AttemptRequest;
  exchange: UpstreamExchange;
  got: { reply: UpstreamReply } | { error: unknown };
}

interface Resumed {
  candidate: Candidate;
  /** The first candidate's credentials in the order usable() gave (it takes a round-robin turn). */
  credentials: CredentialTurn;
  sent: SentAttempt | undefined;
}

function newAttempt(candidate: Candidate, credential: CredentialView): AttemptRecord {
  return { credential_id: String(credential.id), group_id: String(candidate.group.id), status: null, error_code: null };
}

function newResult(attempts: AttemptRecord[]): ForwardResult {
  return { status: 0, candidate: undefined, credential: undefined, attempts, usage: undefined, errorCode: null, clientAborted: false, responseId: undefined, ttfbAt: undefined };
}

/** The result of an attempt whose answer went to the client. */
function recordDelivery(result: ForwardResult, attempt: AttemptRecord, candidate: Candidate, credential: CredentialView, status: number, outcome: DeliveryOutcome): ForwardResult {
  if (status >= 400) attempt.error_code = `upstream_${status}`;
  // A stream that failed before its first byte was answered with the gateway's own error; one
  // whose client left before it (its headers held) is recorded 499.
  result.status = outcome.answeredStatus ?? status;
  result.candidate = candidate;
  result.credential = credential;
  result.usage = outcome.usage;
  result.clientAborted = outcome.clientAborted;
  result.responseId = outcome.responseId;
  result.errorCode = outcome.clientAborted ? 'client_closed' : (outcome.streamFailure ?? attempt.error_code);
  // As for a client that left before the answer: the attempt says why it ended too.
  if (outcome.clientAborted) attempt.error_code = 'client_closed';
  else if (outcome.streamFailure) attempt.error_code = outcome.streamFailure;
  return result;
}

/** Starts an attempt's upstream call, at the credential's own address when it has one, else the Group's. */
function sendAttempt(input: ForwardInput, deps: ForwardDeps, candidate: Candidate, credential: CredentialView, access: CredentialAccess, request: AttemptRequest, headersTimeoutMs: number, settings?: Settings): UpstreamExchange {
  return deps.upstream.exchange({
    url: upstreamTarget(access.baseUrl ?? candidate.group.base_url ?? '', input.op.upstream_path, input.params, candidate.upstream_model, input.search, candidate.group.versionless_api),
    method: input.req.method ?? 'GET',
    headers: request.headers,
    body: request.body,
    headersTimeoutMs,
    bodyIdleTimeoutMs: bodyTimeoutBackstop(deps.idleTimeoutMs, headersTimeoutMs),
    proxy: deps.proxyFor(candidate, credential, settings),
  });
}

async function forwardWithFailover(input: ForwardInput, deps: ForwardDeps, watch: RequestWatch, resumed: Resumed | undefined): Promise<ForwardResult> {
  const attempts: AttemptRecord[] = [];
  const result = newResult(attempts);
  let lastFailure: Failed | undefined;
  let lastTransportError: AttemptFailure | undefined;
  let lastCandidate: Candidate | undefined;
  let lastCredential: CredentialView | undefined;
  let bodyConsumed = false;
  /** The credentials this request's verdicts cooled down or disabled, as they left them. */
  const judged: CredentialView[] = [];
  /** Attempts sent again on a new connection after a stale one (STALE_RENEWALS): not counted against maxAttempts. */
  let renewals = 0;
  /**
   * Attempts sent again with the client's body as it came after their upstream refused the
   * stream_options the gateway added (refusesStreamOptions, remembered in
   * deps.streamOptionsRefusals): not counted against maxAttempts either.
   */
  let optionsResends = 0;
  /** The proxies and Group address that failed this request (see UnreachedTargets): made on the first such failure, the usual request makes none. */
  let unreached: UnreachedTargets | undefined;
  /** Attempts that count: against maxAttempts, and for the last answer's hint (a resend asked no other credential). */
  const counted = () => attempts.length - renewals - optionsResends;
  /** No further attempt may be made. */
  const spent = () => counted() >= deps.maxAttempts || bodyConsumed || clientGone(input);
  let exchange: UpstreamExchange | undefined;
  const abortExchange = () => exchange?.abort();

  try {
    candidates: for (const routed of input.candidates) {
      // Nothing more will be tried: a Group's rotation is not moved a turn it does not use.
      if (routed !== resumed?.candidate && spent()) break;
      const credentials = routed === resumed?.candidate ? resumed.credentials : deps.pool.usable(routed.group, credentialsToTry(input, deps, routed.group.id), deps.now());
      unreached?.nextGroup();
      for (let turn = 0; turn < credentials.length; turn++) {
        const listed = credentials.at(turn)!;
        // The first attempt forwardNative made (after the same checks) is taken over here.
        const sent = attempts.length === 0 && resumed?.sent?.credential === listed ? resumed.sent : undefined;
        if (sent === undefined && spent()) break;
        // The shutdown's grace ran out while this request was between attempts: no new upstream call.
        if (sent === undefined && deps.inFlight?.ended) return answerTransportFailure(input, result, { error: new DataPlaneError('shutting_down'), candidate: lastCandidate ?? routed, credential: lastCredential });
        // Routed by the configuration as it was before an earlier attempt's wait: a credential or
        // Group deleted, disabled, rotated or changed meanwhile, once acknowledged, is not tried as
        // it was (nor a Group that no longer maps the model).
        const configured = await attemptTargetNow(routed, listed, attempts.length === 0, () => deps.credentialNow(routed.group.id, listed.id));
        if (configured === undefined) continue;
        const { candidate, credential, settings } = configured;
        // Asked only once a failure is noted: none is for the usual request.
        const proxy = unreached?.noted ? deps.proxyFor(candidate, credential, settings) : undefined;
        if (unreached?.behindFailedProxy(proxy)) continue;
        const access = sent?.access ?? deps.pool.cachedAccess(credential) ?? (await deps.pool.accessOf(credential));
        if (access === undefined) continue;
        if (unreached?.atFailedGroupAddress(access, candidate.group, proxy)) continue;
        const { secret } = access;
        // A first attempt already sent has its timeout set.
        const headersTimeoutMs = sent === undefined ? attemptHeadersTimeout(deps.headersTimeoutMs, input.clientDeadline, deps.now, attempts.length === 0) : deps.headersTimeoutMs;
        // The client's SDK would give up before another attempt could be answered: the answer
        // now, the earlier attempt's own failure (its status and body, as sent) when one is kept.
        if (headersTimeoutMs === undefined) {
          if (lastFailure !== undefined || lastTransportError !== undefined) break candidates;
          return answerTransportFailure(input, result, { error: new DataPlaneError('upstream_timeout', CLIENT_DEADLINE_DETAIL, NO_RETRY), candidate: lastCandidate ?? candidate, credential: lastCredential });
        }
        const attempt = sent?.attempt ?? newAttempt(candidate, credential);
        attempts.push(attempt);
        lastCandidate = candidate;
        lastCredential = credential;
        exchange = undefined;
        let streamedBody: Readable | undefined;
        let dropUsageChunk = false;
        watch.point(abortExchange);
        let upstream: UpstreamReply;
        try {
          const pending = sent?.request ?? attemptRequest(input, candidate, secret, !deps.streamOptionsRefusals.has(candidate.group, credential));
          // A JSON body's request is ready at once: no turn of the event loop for it.
          const request = pending instanceof Promise ? await pending : pending;
          streamedBody = request.streamedBody;
          dropUsageChunk = request.dropUsageChunk;
          if (input.body.kind === 'stream') bodyConsumed = input.body.replayable !== true;
          exchange = sent?.exchange ?? sendAttempt(input, deps, candidate, credential, access, request, headersTimeoutMs, settings);
          if (sent === undefined) upstream = await exchange.reply;
          else if ('reply' in sent.got) upstream = sent.got.reply;
          else throw sent.got.error;
        } catch (err) {
          watch.point(undefined);
          const resendable = input.op.replay_safe && !bodyConsumed;
          const failed = await attemptFailed(input, deps, result, { candidate, credential, settings, access, attempt, streamedBody, judged, resendable, renewalsLeft: renewals < STALE_RENEWALS }, err);
          if (failed === 'client_closed') break;
          if ('status' in failed) return failed;
          lastTransportError = failed;
          if (failed.proxyFailed) (unreached ??= new UnreachedTargets()).proxyFailed(failed.proxy);
          if (failed.groupAddressFailed) (unreached ??= new UnreachedTargets()).groupAddressFailed(failed.proxy);
          // The same credential again, on a new connection (the stale one is gone from the pool).
          if (failed.renew) {
            renewals++;
            turn--;
            continue;
          }
          if (failed.skipGroup) continue candidates;
          // A connection that never opened proves the upstream saw nothing; other failures may not.
          // Then this failure is the answer: an earlier credential's refusal (a 429) would tell the
          // client that nothing ran, when this attempt may have.
          if (!input.op.replay_safe && !failed.notDelivered) return answerTransportFailure(input, result, failed, hintOfLastAnswer(input, deps, counted(), judged));
          continue;
        }
        watch.point(undefined);
        attempt.status = upstream.status;
        let failure: UpstreamErrorReply | DataPlaneError | undefined;
        // A success is not judged: nothing of this is made for it.
        if (upstream.status >= 400) {
          // An error body that says more than its status (Google's shape, an OpenAI 401/403's code)
          // is read before the verdict: it is read whole for the client anyway, and successful answers never are.
          // Google types its error to an `alt=sse` request `text/event-stream` (its JSON object all the
          // same): read too, or a 403 about a file would be judged by its status and disable every key in turn.
          failure = judgedByBody(input.op, upstream.status) && isReadableError(upstream, input.op.error_style === 'generate') ? await readErrorAnswer(upstream, secret, deps.idleTimeoutMs, watch, attempt) : undefined;
          const body = failure === undefined || failure instanceof DataPlaneError || failure.stream !== undefined ? undefined : failure.body;
          const answer = judgeUpstreamAnswer(upstream.status, upstream.headers, input.op, body, input.req.headers, deps.cooldowns, deps.now());
          if (answer.failsOver) {
            judged.push(await deps.pool.apply(credential, access, answer.verdict, deps.now()));
            const mayRetry = !bodyConsumed && (input.op.replay_safe || answer.rejectedBeforeProcessing);
            if (mayRetry && counted() < deps.maxAttempts) {
              failure ??= await readErrorAnswer(upstream, secret, deps.idleTimeoutMs, watch, attempt);
              if (failure instanceof DataPlaneError) {
                // Undecodable: this attempt failed as the status says, the next credential may still answer.
                lastTransportError = { error: failure, candidate, credential };
                continue;
              }
              // Kept in case it is the last answer.
              lastFailure?.stream?.abort();
              lastFailure = { ...failure, candidate, credential };
              attempt.error_code = `upstream_${upstream.status}`;
              continue;
            }
          }
        }
        if (clientGone(input)) {
          upstream.abort();
          if (failure !== undefined && !(failure instanceof DataPlaneError)) failure.stream?.abort();
          result.clientAborted = true;
          attempt.error_code = 'client_closed';
          break;
        }
        if (failure !== undefined || isReadableError(upstream)) {
          failure ??= await readErrorAnswer(upstream, secret, deps.idleTimeoutMs, watch, attempt);
          if (failure instanceof DataPlaneError) return answerTransportFailure(input, result, { error: failure, candidate, credential }, hintOfLastAnswer(input, deps, counted(), judged));
          if (clientGone(input)) {
            failure.stream?.abort();
            result.clientAborted = true;
            attempt.error_code = 'client_closed';
            break;
          }
          // As for an error answer kept for failover or streamed on: the attempt's code says what it got.
          attempt.error_code = `upstream_${upstream.status}`;
          // The same credential again, with the client's body as it came.
          if (dropUsageChunk && !bodyConsumed && refusesStreamOptions(failure.status, failure.body)) {
            failure.stream?.abort();
            deps.streamOptionsRefusals.add(candidate.group, credential);
            optionsResends++;
            turn--;
            continue;
          }
          return await answerUpstreamError(input, deps, result, { ...failure, candidate, credential }, watch.point, hintOfLastAnswer(input, deps, counted(), judged));
        }
        // An error answer streamed as it comes still has the secret masked out of it; so has a
        // redirect (status 300-399), whose body repeats its location (Express: `Found. Redirecting to <url>`).
        // A redirect is no failure: its headers stay as sent.
        const hint = upstream.status >= 400 ? hintOfLastAnswer(input, deps, counted(), judged) : undefined;
        const delivered =
          upstream.status >= 300
            ? maskedOrUndecodable(attempt, () => {
                const masked = maskedUpstreamError(upstream, secret);
                replaceRetryHint(masked.headers, hint);
                return masked;
              })
            : upstream;
        if (delivered instanceof DataPlaneError) return answerTransportFailure(input, result, { error: delivered, candidate, credential }, hint);
        const outcome = await deliverUpstreamResponse(delivered, deliveryOptions(input, deps, result, dropUsageChunk, watch.point, candidate, credential), secret);
        return recordDelivery(result, attempt, candidate, credential, upstream.status, outcome);
      }
    }
    // First: a client that left during a later attempt never got the error kept from an earlier one.
    if (result.clientAborted || clientGone(input)) {
      // Logged like any other outcome: 499, with the route and credential it was on.
      result.clientAborted = true;
      result.status = REFUSAL_REASONS.client_closed.status;
      result.errorCode = 'client_closed';
      result.candidate = lastCandidate ?? input.candidates[0];
      result.credential = lastCredential;
      return result;
    }
    // Awaited, so that the finally below finds its stream sent.
    if (lastFailure) return await answerUpstreamError(input, deps, result, lastFailure, watch.point, hintOfLastAnswer(input, deps, counted(), judged));
    if (lastTransportError) return answerTransportFailure(input, result, lastTransportError, hintOfLastAnswer(input, deps, counted(), judged));
    const why = input.onlyCredentialId === undefined ? deps.pool.noCredentialDetail(input.candidates.map((c) => c.group), deps.credentialsOf, deps.now()) : `The credential that holds this ${input.op.resource?.kind ?? 'response'} is disabled, cooling down or gone.`;
    const error = new DataPlaneError('no_available_credential', why, deps.pool.retryHeaders(input.candidates.map((c) => c.group), (id) => credentialsToTry(input, deps, id), deps.now()));
    return answerTransportFailure(input, result, { error, candidate: input.candidates[0]!, credential: undefined });
  } finally {
    // A kept error answer that was not sent still holds its upstream connection.
    lastFailure?.stream?.abort();
  }
}

/** A Group's credentials this request may use: all of them, or only the one it is bound to. */
function credentialsToTry(input: ForwardInput, deps: ForwardDeps, groupId: number): readonly CredentialView[] {
  const all = deps.credentialsOf(groupId);
  const only = input.onlyCredentialId;
  return only === undefined ? all : boundCredentials(all, only);
}

/** lastAnswerHint for this request: its candidate Groups, and only the credential it is bound to when it is. */
function hintOfLastAnswer(input: ForwardInput, deps: ForwardDeps, attempts: number, judged: readonly CredentialView[]): Readonly<Record<string, string>> | undefined {
  const groups = input.candidates.map((c) => c.group);
  return lastAnswerHint(deps.pool, groups, (groupId) => credentialsToTry(input, deps, groupId), judged, attempts, deps.now());
}

/**
 * Passes an upstream's error answer on as the upstream sent it (minus its own secret, and with
 * `hint` for its retry headers when given). One too large to read whole streams on the way any
 * large answer does.
 */
async function answerUpstreamError(input: ForwardInput, deps: ForwardDeps, result: ForwardResult, failure: Failed, setClientGone: DeliveryOptions['onClientGone'], hint: Readonly<Record<string, string>> | undefined): Promise<ForwardResult> {
  // The streamed rest of a long answer goes with these same headers.
  replaceRetryHint(failure.headers, hint);
  result.status = failure.status;
  result.errorCode = `upstream_${failure.status}`;
  result.candidate = failure.candidate;
  result.credential = failure.credential;
  if (failure.stream === undefined || clientGone(input)) {
    failure.stream?.abort();
    // Sent whole at once: its first byte goes now (none to a client gone).
    if (!clientGone(input)) result.ttfbAt = deps.now();
    sendUpstreamError(input.res, input.requestId, failure, input.op.error_style === 'messages');
    return result;
  }
  const outcome = await deliverUpstreamResponse(failure.stream, deliveryOptions(input, deps, result, false, setClientGone));
  // As recordDelivery: a body that failed before its first byte was answered with the gateway's
  // own error, and a client that left before it (the headers held) is recorded 499.
  result.status = outcome.answeredStatus ?? failure.status;
  result.clientAborted = outcome.clientAborted;
  if (outcome.clientAborted) result.errorCode = 'client_closed';
  else if (outcome.streamFailure) result.errorCode = outcome.streamFailure;
  return result;
}

/** `candidate` and `credential`: whose answer this is, when it is not an error kept from an earlier attempt. */
function deliveryOptions(input: ForwardInput, deps: ForwardDeps, result: ForwardResult, dropUsageChunk: boolean, onClientGone: DeliveryOptions['onClientGone'], candidate?: Candidate, credential?: CredentialView): DeliveryOptions {
  const { onCreatedId } = input;
  // Only a whole number resumes: any other `starting_after` would turn the break check off.
  const firstSequence = input.op.id === 'responses-retrieve' ? resumedFirstSequence(input.search) : undefined;
  return {
    onClientGone,
    res: input.res,
    requestId: input.requestId,
    streamStyle: input.streamStyle,
    streamEnd: streamEndStyle(input.op.id, input.streamStyle),
    usageStyle: input.usageStyle,
    dropUsageChunk,
    // A created object's id names it; a read's names the one it read. Another call that names one in its body (a continuation, speech in a voice) answers with no such id.
    captureResponseId: input.op.resource !== undefined && (input.op.resource.creates === true || input.op.resource.path_parameter !== undefined),
    // Always present, so that every request's options have one shape.
    onResponseId: onCreatedId !== undefined && candidate !== undefined && credential !== undefined ? (id: string) => onCreatedId(id, candidate, credential) : undefined,
    idleTimeoutMs: deps.idleTimeoutMs,
    onFirstByte: () => {
      result.ttfbAt ??= deps.now();
    },
    captureLimitBytes: 4 * 1024 * 1024,
    streamingOperation: input.op.stream === 'always',
    streamRequested: input.streamRequested,
    firstSequence,
    inFlight: deps.inFlight,
  };
}

/**
 * One attempt's upstream request: the client's headers with the credential, and the body with
 * the candidate's model (a JSON body rewritten in memory, a streamed one opened anew).
 */
function attemptRequest(input: ForwardInput, candidate: Candidate, secret: string, streamUsage: boolean): AttemptRequest | Promise<AttemptRequest> {
  const { body } = input;
  if (body.kind === 'json') return jsonAttemptRequest(input, body, candidate, secret, streamUsage);
  const headers = attemptHeaders(input, candidate, secret);
  if (body.kind === 'none') {
    delete headers['content-length'];
    return { headers, body: null, streamedBody: undefined, dropUsageChunk: false };
  }
  return body.open(candidate.upstream_model, bodyModelMapping(input.op.id, input.params['model'], candidate.upstream_model), streamUsage && asksStreamUsage(candidate.group.channel)).then((opened) => {
    if (opened.length !== undefined) headers['content-length'] = String(opened.length);
    else delete headers['content-length'];
    return { headers, body: opened.stream, streamedBody: opened.stream, dropUsageChunk: opened.addedStreamUsage === true };
  });
}

/**
 * attemptRequest for a JSON body, which is ready at once. `streamUsage`: a completions stream
 * may be asked for its usage (false once its upstream refused stream_options).
 */
function jsonAttemptRequest(input: ForwardInput, body: JsonBody, candidate: Candidate, secret: string, streamUsage: boolean): AttemptRequest {
  const headers = attemptHeaders(input, candidate, secret);
  const listed = bodyModelMapping(input.op.id, input.params['model'], candidate.upstream_model);
  // An upstream that sends stream usage unasked refuses the request for it: nothing added, nothing hidden.
  const requestStreamUsage = input.requestStreamUsage !== undefined && streamUsage && asksStreamUsage(candidate.group.channel) ? input.requestStreamUsage : undefined;
  const built = jsonAttemptBody(body.raw, body.value, input.op.model === 'body' ? candidate.upstream_model : null, requestStreamUsage, listed, body.repeatsModel);
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(built.body.length);
  return { headers, body: built.body, streamedBody: undefined, dropUsageChunk: built.addedStreamUsage };
}

/** The client's headers to forward, with the attempt's credential where the candidate's channel reads it. */
function attemptHeaders(input: ForwardInput, candidate: Candidate, secret: string): OutgoingHeaders {
  const headers = upstreamRequestHeaders(input.req.headers);
  setUpstreamCredential(headers, candidate.group.channel, input.op.protocol, secret);
  return headers;
}

interface AttemptRequest {
  headers: OutgoingHeaders;
  body: Buffer | Readable | null;
  streamedBody: Readable | undefined;
  dropUsageChunk: boolean;
}

interface Attempted {
  candidate: Candidate;
  credential: CredentialView;
  settings: Settings | undefined;
  /** The secret the attempt used: a verdict holds only for its revision. */
  access: CredentialAccess;
  attempt: AttemptRecord;
  streamedBody: Readable | undefined;
  /** The request's judged credentials, which a verdict here joins. */
  judged: CredentialView[];
  /** The operation may be sent again (replay_safe) and its body can be. */
  resendable: boolean;
  /** Fewer than STALE_RENEWALS attempts of this request were sent again after a stale connection. */
  renewalsLeft: boolean;
}

/**
 * An attempt that got no upstream answer: the client left (`client_closed`), the request is
 * answered here (the shutdown, the client's own body failed, or the upstream's answer is
 * overdue), or the credential cools down and the failure is kept, `notDelivered` when the
 * upstream provably saw nothing.
 */
async function attemptFailed(input: ForwardInput, deps: ForwardDeps, result: ForwardResult, at: Attempted, err: unknown): Promise<'client_closed' | ForwardResult | FailedAttempt> {
  const { candidate, credential, attempt } = at;
  // node's parser refused the body's framing as it streamed, answered 400 itself and cut the
  // connection: the client did not leave, and the upstream is not to blame.
  const framing = brokenBodyFraming(input.req);
  if (framing) {
    attempt.error_code = framing.code;
    return answerTransportFailure(input, result, { error: framing, candidate, credential });
  }
  if (clientGone(input)) {
    result.clientAborted = true;
    attempt.error_code = 'client_closed';
    return 'client_closed';
  }
  // The shutdown called the upstream request off: the gateway's answer, and no fault of the credential.
  if (deps.inFlight?.ended) {
    attempt.error_code = 'shutting_down';
    return answerTransportFailure(input, result, { error: new DataPlaneError('shutting_down'), candidate, credential });
  }
  // The client's own body failed while it streamed (too large, a broken form), or the spool
  // file did (spool_unavailable): the upstream is not to blame, and the next attempt would fare
  // no better. Other body errors (undici's own, on an upstream reset) are the upstream's.
  const bodyFailure = requestBodyFailure(at.streamedBody === undefined ? err : at.streamedBody.errored);
  if (bodyFailure) {
    attempt.error_code = bodyFailure.code;
    // The Group maps the model to a name a form cannot carry: nothing was sent and no credential
    // is at fault; every credential of this Group would send the same mapping, the next Group's may be usable.
    if (bodyFailure.code === 'model_mapping_unusable') return { error: bodyFailure, candidate, credential, notDelivered: true, skipGroup: true };
    return answerTransportFailure(input, result, { error: bodyFailure, candidate, credential });
  }
  const proxy = deps.proxyFor(candidate, credential, at.settings);
  const failure = classifyUpstreamError(err, { viaProxy: proxy !== undefined });
  attempt.error_code = failure.code;
  // A stored proxy URL the gateway cannot use, or a proxy that is down or refuses the gateway's
  // login: the gateway's side is at fault, not the credential (a shared proxy would otherwise
  // shelve every credential behind it), and nothing was sent.
  if (failedAtGateway(failure)) return { error: new DataPlaneError(failure.kind), candidate, credential, notDelivered: true, proxy, proxyFailed: failedAtProxy(failure) };
  // The upstream's certificate was refused: the gateway's trust store or the upstream's
  // certificate, the same for every credential, so no verdict (as for a failing proxy); nothing
  // was sent. At the Group's address, the Group's other credentials there are passed over (they
  // would reach the same certificate); at its own address, the next credential. Nor one for the
  // SDKs to send again: the certificate is refused the same way until it or the trust store changes.
  if (failure.certificateRefused) {
    const error = new DataPlaneError('upstream_unreachable', `(${failure.code})`, NO_RETRY);
    return { error, candidate, credential, notDelivered: true, proxy, groupAddressFailed: atGroupAddress(at.access, candidate.group) };
  }
  // The upstream took the request and has not answered in time: no verdict on the credential,
  // and no other attempt (it would send, and bill, the prompt again); the client's answer now,
  // and for the same reason not one for the SDKs to send again.
  if (failure.overdue) return answerTransportFailure(input, result, { error: new DataPlaneError('upstream_timeout', `(${failure.code})`, NO_RETRY), candidate, credential });
  // The connection broke while the body was still going out and before any answer: the upstream
  // stopped the upload (most often an early refusal, such as of a body too large, whose answer
  // the reset discarded). No fault of the credential: another client's smaller body may pass.
  // Nor one for the SDKs to send again: the same body would be refused the same way.
  if (failure.whileSending) return { error: new DataPlaneError('upstream_unreachable', CLOSED_WHILE_SENDING_DETAIL, NO_RETRY), candidate, credential, notDelivered: false };
  // A pooled connection the upstream closed as the request crossed its idle timeout: nothing
  // said of the credential. Sent again on a new connection when it may be; else the client's
  // answer, no verdict. Once the renewals are spent (the pool's other idle connections were
  // stale too) it fails as any lost connection does.
  if (failure.staleConnection && (!at.resendable || at.renewalsLeft)) {
    return { error: new DataPlaneError('upstream_unreachable', `(${failure.code})`), candidate, credential, notDelivered: false, ...(at.resendable ? { renew: true as const } : {}) };
  }
  const lost = failure.staleConnection ? CONNECTION_LOST : failure;
  attempt.error_code = lost.code;
  at.judged.push(await deps.pool.apply(credential, at.access, verdictFor(null, undefined, deps.cooldowns, deps.now()), deps.now()));
  // An operation not safe to replay that an upstream may have run (an image generated and
  // billed) goes to no other credential, and is not for the SDKs to send again either.
  const mayHaveRun = lost.notDelivered !== true;
  const hint = mayHaveRun && !input.op.replay_safe ? NO_RETRY : undefined;
  const error = new DataPlaneError(lost.kind.endsWith('timeout') ? 'upstream_timeout' : 'upstream_unreachable', `(${lost.code})`, hint);
  // A connection that never opened at the Group's address (never delivered, then): the Group's other
  // credentials there would not reach it either (the credential keeps its cooldown, by which later requests recover).
  return { error, candidate, credential, notDelivered: !mayHaveRun, proxy, groupAddressFailed: neverConnected(lost) && atGroupAddress(at.access, candidate.group) };
}

interface AttemptFailure {
  error: DataPlaneError;
  candidate: Candidate;
  /** Undefined when no credential could be tried at all. */
  credential: CredentialView | undefined;
}

/** A failed attempt the request may go on from: `notDelivered` when the upstream provably saw nothing. */
interface FailedAttempt extends AttemptFailure {
  notDelivered: boolean;
  /** No credential of this Group can serve the request: go on with the next Group. */
  skipGroup?: true;
  /** The managed proxy the attempt went through, if any: the one to note when `proxyFailed` or `groupAddressFailed`. */
  proxy?: string | undefined;
  /** `proxy` failed at the gateway's side (failedAtProxy): no other credential behind it is tried. */
  proxyFailed?: boolean;
  /** The Group's address failed (see atGroupAddress): its other credentials there, through the same `proxy` (or none), are passed over. */
  groupAddressFailed?: boolean;
  /** Sent on a stale pooled connection: send it again to the same credential. */
  renew?: true;
}

/**
 * Answers a request whose attempts all failed without an upstream answer (or whose body
 * failed on the way), in the client's protocol. Answered here rather than thrown so that the
 * result (and with it the log record) keeps every attempt and names the route and the last
 * credential tried.
 */
function answerTransportFailure(input: ForwardInput, result: ForwardResult, last: AttemptFailure, hint?: Readonly<Record<string, string>>): ForwardResult {
  const { error } = last;
  result.status = error.status;
  result.errorCode = error.code;
  result.candidate = last.candidate;
  result.credential = last.credential;
  // One the gateway tells the SDKs not to retry keeps that: no credential's recovery would change its outcome.
  const answer = hint === undefined || error.headers['x-should-retry'] === 'false' ? error : { status: error.status, code: error.code, message: error.message, headers: replaceRetryHint({ ...error.headers }, hint) };
  sendGatewayError(input.res, input.op.error_style, answer, input.requestId);
  return result;
}

/**
 * Reads an error answer whole (its first MiB), to judge it and to mask it for the client. A body
 * that stalls is cut at the idle timeout, as a plain answer's is, rather than at the body
 * timeout's backstop (590 s with the defaults), whether another credential follows or it is the
 * client's answer; a client that leaves meanwhile ends the read.
 */
async function readErrorAnswer(upstream: UpstreamReply, secret: string, idleTimeoutMs: number, watch: RequestWatch, attempt: AttemptRecord): Promise<UpstreamErrorReply | DataPlaneError> {
  watch.point(() => upstream.abort());
  const read = await readUpstreamError(upstream, secret, idleTimeoutMs).catch((err: unknown) => undecodableAnswer(err, attempt));
  watch.point(undefined);
  return read;
}

/**
 * Streams have their own idle watcher, which ends them with the protocol's error event, and so
 * has a plain body still open after the turn that brought its first bytes (RelayContext); the
 * client's body timeout only catches a body that stops for far longer (a stuck connection, a
 * body silent before its first byte): at least twice the idle timeout. It is the headers
 * timeout when that is long enough (the defaults, 590 s against 120 s), because undici makes a
 * new timer for each phase of a request when their timeouts differ, and only refreshes one
 * when they are the same.
 */
function bodyTimeoutBackstop(idleTimeoutMs: number, headersTimeoutMs: number): number {
  return Math.max(headersTimeoutMs, Math.max(idleTimeoutMs, 1000) * 2);
}

// The request stream is destroyed once read; the response and socket tell whether the client left.
function clientGone(input: ForwardInput): boolean {
  return input.res.destroyed || input.req.socket.destroyed;
}

