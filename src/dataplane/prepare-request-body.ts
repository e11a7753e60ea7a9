import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import type { OperationEntry } from '../generated/index.ts';
import { continueBody } from '../http/expect-continue.ts';
import type { RecordedRequestBody } from '../store/logs/index.ts';
import { streamUsageMissing } from '../usage/index.ts';
import { attemptSplices, BodyRewriteError, bodyModelKey, caseVariantOf, checkRepeatedMembers, FollowedSpoolFile, formModelSplice, formStreamRefusal, MODEL_FIELD_BYTES, modelNameTooLong, receiveJsonBody, RefusedBodyPrefix, refuseCaseVariants, refuseNonBooleanStream, refuseRepeatedMembers, ROUTING_INPUT_MEMBERS, ROUTING_SMALL_MEMBERS, spliceDelta, SpooledFormBody, SpoolFailure, type BodyModelMapping, type FormModel, type ScannedMember, type SpooledJsonBody } from './body/index.ts';
import { capturePrefix, type CapturedPrefix } from './capture-prefix.ts';
import { checkTransferCoding } from './check-transfer-coding.ts';
import { DataPlaneError } from './data-plane-error.ts';
import { requestBodyFailure } from './request-body-failure.ts';
import type { ForwardBody } from './forward-native.ts';
import { parseJsonText, readBody } from './read-body.ts';
import { recordedBodyText } from './recorded-body-text.ts';

export interface PreparedBody {
  body: ForwardBody;
  /** Parsed JSON (or the small text fields of a form) for the model and routing features. */
  fields: Record<string, unknown> | undefined;
  /**
   * Called once, when the request has ended: what the log records of the body (a streamed
   * body is only known then; one the upstream answered before it ended is recorded truncated).
   * It also removes a spooled body's temporary file.
   */
  recorded(): RecordedRequestBody | undefined;
  /**
   * The body was read but is refused (not JSON, not an object, a malformed form), or a form's
   * did not all arrive (too large, silent, its client gone): kept so that the log still records it.
   */
  refusal?: DataPlaneError;
  /** The refusal is a body cut short: it stands whatever became of the key, which only decides whether the body is recorded. */
  cutShort?: boolean;
  /**
   * The body was still arriving when it was routed (a form from its model field on, a large
   * passthrough body): its key is read again once the upload has ended, for its recording only.
   */
  streamed?: boolean;
}

export interface BodyLimits {
  maxBodyBytes: number;
  /** JSON bodies up to this size are parsed whole in memory; larger ones are spooled to a file. */
  bufferedJsonBytes: number;
  /** Where large JSON bodies and forms are spooled; the system's temporary directory by default. */
  spoolDir?: string;
}

/** What `open()` gives for a spooled body: ForwardBody's stream, plus whether usage was asked for. */
export interface OpenedSpooledBody {
  stream: Readable;
  length: number;
  /** `stream_options.include_usage` was added on the client's behalf: drop the usage-only chunk. */
  addedStreamUsage: boolean;
}

const NO_BODY: PreparedBody = { body: { kind: 'none' }, fields: undefined, recorded: () => undefined };
/** How much of a streamed body is kept when the key records request bodies. */
const RECORD_PREFIX_BYTES = 1024 * 1024;
/** Top-level members the model, routing and the stream usage request need. */
const SMALL_MEMBERS = ['model', ...ROUTING_SMALL_MEMBERS, 'stream_options'];
/** Their values are kept up to this size; no real request comes near it. */
const SMALL_MEMBER_BYTES = 64 * 1024;
const ROUTING_MEMBERS = [...SMALL_MEMBERS, ...ROUTING_INPUT_MEMBERS];
const isCaseVariant = (key: string): boolean => caseVariantOf(key) !== undefined;
const QUOTE = 0x22;

/**
 * Reads what the operation's body kind needs to route the request. JSON up to
 * `bufferedJsonBytes` is parsed whole, larger JSON is spooled to a file and scanned for its
 * routing members, multipart bodies are spooled as they stream through with only the model
 * rewritten, and larger passthrough bodies are spooled as sent, so an upload is never held in
 * memory whole and another attempt can send it again. Whichever way it is read, a body that
 * stops coming for `idleTimeoutMs` is refused with `request_timeout` (or, once streaming to the
 * upstream, fails that request with it).
 */
export function prepareRequestBody(req: IncomingMessage, op: OperationEntry, record: boolean, limits: BodyLimits, idleTimeoutMs: number): PreparedBody | Promise<PreparedBody> {
  checkTransferCoding(req);
  if (op.body === 'none' || op.body === 'websocket' || req.method === 'GET' || req.method === 'HEAD') return NO_BODY;
  if (op.body === 'raw') return rawBody(req, record, limits, idleTimeoutMs);
  // The gateway reads every body it forwards (for the model), so a compressed one would only fail as invalid JSON or form.
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') throw new DataPlaneError('unsupported_content_encoding', `Got "${encoding}".`, { 'accept-encoding': 'identity' });
  const contentType = String(req.headers['content-type'] ?? '');
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (declared !== undefined && declared > limits.maxBodyBytes) throw new DataPlaneError('request_too_large');
  // Refused by now or read from here: a client waiting for `100 Continue` is told to send it.
  continueBody(req);
  // Only an endpoint that takes a form reads one: a JSON endpoint parses what it got as JSON
  // (and refuses it), so that no form is routed by its fields and forwarded past rules that read the body.
  if (op.body === 'multipart' && contentType.toLowerCase().startsWith('multipart/form-data')) {
    // A form that names no model (a voice upload) has nothing to rewrite: it passes as sent, its files unscanned.
    return op.model === 'none' ? rawBody(req, record, limits, idleTimeoutMs) : streamMultipart(req, contentType, declared, record, limits, idleTimeoutMs);
  }
  // Most requests: a small JSON body read whole, with one promise less than the async path below.
  if (declared !== undefined && declared <= limits.bufferedJsonBytes) {
    return readWhole(req, limits, (raw) => bufferedJson(raw, record), record, declared, idleTimeoutMs);
  }
  return receivedJson(req, op, record, limits, declared, idleTimeoutMs);
}

async function receivedJson(req: IncomingMessage, op: OperationEntry, record: boolean, limits: BodyLimits, declared: number | undefined, idleTimeoutMs: number): Promise<PreparedBody> {
  const wanted = new Map([...SMALL_MEMBERS.map((k) => [k, SMALL_MEMBER_BYTES] as const), ...ROUTING_INPUT_MEMBERS.map((k) => [k, limits.bufferedJsonBytes] as const)]);
  const listedKey = bodyModelKey(op.id);
  // A top-level `model` (embedContent's) is wanted already, with routing's limit.
  // A nested model longer than a model name's cap names no routed model and stays as sent.
  if (listedKey !== undefined && !wanted.has(listedKey)) wanted.set(listedKey, MODEL_FIELD_BYTES);
  let received;
  try {
    received = await receiveJsonBody(req, { declared, maxBodyBytes: limits.maxBodyBytes, bufferedJsonBytes: limits.bufferedJsonBytes, spoolDir: limits.spoolDir ?? tmpdir(), wanted, isCaseVariant, keepBytes: record ? RECORD_PREFIX_BYTES : 0, idleTimeoutMs });
  } catch (err) {
    // As for a buffered body, a key that records bodies gets the refused one too (its first MiB).
    if (err instanceof RefusedBodyPrefix) return refusedPrefix(err, declared);
    throw requestBodyFailure(err) ?? err;
  }
  return received.kind === 'buffered' ? bufferedJson(received.raw, record) : spooledJson(received.body, op, record);
}

/**
 * A passthrough body, sent on as the client sent it, whatever its type or encoding: nothing in
 * it routes the request. A small one is read whole; a larger one (or one of unknown length) is
 * spooled as it arrives, the first attempt streaming as the upload does. Either way another
 * attempt can send it again.
 */
function rawBody(req: IncomingMessage, record: boolean, limits: BodyLimits, idleTimeoutMs: number): PreparedBody | Promise<PreparedBody> {
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  // HTTP/1.1: neither a length nor chunked framing means no body.
  if (declared === 0 || (declared === undefined && req.headers['transfer-encoding'] === undefined)) return NO_BODY;
  if (declared !== undefined && declared > limits.maxBodyBytes) throw new DataPlaneError('request_too_large');
  continueBody(req);
  if (declared !== undefined && declared <= limits.bufferedJsonBytes) {
    return readWhole(req, limits, (raw) => bufferedRaw(raw, record), record, declared, idleTimeoutMs);
  }
  return spooledRaw(req, declared, record, limits, idleTimeoutMs);
}

async function spooledRaw(req: IncomingMessage, declared: number | undefined, record: boolean, limits: BodyLimits, idleTimeoutMs: number): Promise<PreparedBody> {
  const tee = capturePrefix(req, record ? RECORD_PREFIX_BYTES : 0, limits.maxBodyBytes, idleTimeoutMs);
  const spooled = new FollowedSpoolFile(tee.stream, limits.spoolDir ?? tmpdir());
  const recorded = (): RecordedRequestBody | undefined => {
    if (!record) return undefined;
    return recordedPrefix(tee.captured(), declared);
  };
  try {
    // Before any attempt: a spool file that cannot be written is the gateway's failure, not the upstream's.
    await spooled.opened;
  } catch (err) {
    tee.stream.destroy();
    req.resume();
    // As for a form: a spool file failure is ours, anything else the body cut short (too large,
    // silent, its client gone) before the file opened, recorded as far as it arrived.
    const refusal = requestBodyFailure(err) ?? (req.destroyed ? new DataPlaneError('client_closed', 'Its body had not ended.') : undefined);
    if (refusal === undefined) throw err;
    if (err instanceof SpoolFailure) return refusedBody(refusal, recorded());
    return { ...refusedBody(refusal, recorded()), cutShort: true };
  }
  return {
    body: { kind: 'stream', replayable: true, open: async () => (declared === undefined ? { stream: spooled.read() } : { stream: spooled.read(), length: declared }) },
    fields: undefined,
    streamed: true,
    recorded: () => {
      spooled.release();
      return recorded();
    },
  };
}

function bufferedRaw(raw: Buffer, record: boolean): PreparedBody {
  if (raw.length === 0) return NO_BODY;
  const recorded: RecordedRequestBody | undefined = record ? recordedBodyText(raw, raw.length) : undefined;
  return {
    body: { kind: 'stream', replayable: true, open: async () => ({ stream: Readable.from([raw]), length: raw.length }) },
    fields: undefined,
    recorded: () => recorded,
  };
}

// An empty body is not a JSON object either: refused as invalid JSON, not forwarded as nothing.
function bufferedJson(raw: Buffer, record: boolean): PreparedBody {
  const text = raw.toString('utf8');
  let value: Record<string, unknown>;
  let repeatsModel: boolean;
  try {
    // RFC 8259 §8.1: UTF-8 only. A stray or overlong byte is U+FFFD in `text` but is forwarded
    // as sent, and a lenient decoder upstream could read it as a key's letter. One native pass.
    if (!isUtf8(raw)) throw new DataPlaneError('invalid_json', 'The body is not UTF-8.');
    value = parseJsonText(text);
    refuseNonBooleanStream(value);
    repeatsModel = checkRepeatedMembers(raw, text, value);
    refuseCaseVariants(Object.keys(value));
  } catch (err) {
    if (!record || !(err instanceof DataPlaneError)) throw err;
    // A key that records bodies gets the refused one too: that is when its owner wants to see it.
    return refusedBody(err, recordedBodyText(raw, raw.length));
  }
  // The bytes as sent, not the parsed value: that would lose number precision, duplicate keys and escapes.
  const recorded = record ? recordedBodyText(raw, raw.length) : undefined;
  return { body: { kind: 'json', raw, value, repeatsModel }, fields: value, recorded: () => recorded };
}

/**
 * A spooled body is sent from its file with the same splices a buffered one gets (the mapped
 * model, stream usage), so every byte the client sent arrives as sent and `open()` may be
 * called once per attempt.
 */
function spooledJson(spooled: SpooledJsonBody, op: OperationEntry, record: boolean): PreparedBody {
  let fields: Record<string, unknown>;
  try {
    refuseRepeatedMembers(spooled.scanned.members);
    if (spooled.scanned.caseVariant !== undefined) refuseCaseVariants([spooled.scanned.caseVariant]);
    fields = fieldsOf(spooled.scanned.members);
    refuseNonBooleanStream(fields);
  } catch (err) {
    spooled.release();
    if (!record || !(err instanceof DataPlaneError)) throw err;
    return refusedBody(err, recordedBodyText(spooled.head, spooled.size));
  }
  const addStreamUsage = op.protocol === 'x-completions' && streamUsageMissing(fields);
  const duplicateModel = spooled.scanned.members.filter((m) => m.key === 'model').length > 1;
  const open = async (upstreamModel: string | null, listed?: BodyModelMapping, asksStreamUsage = true): Promise<OpenedSpooledBody> => {
    // As for a buffered body: a duplicate "model" is spliced too, whichever one the upstream reads.
    const model = op.model === 'body' && upstreamModel !== null && (fields['model'] !== upstreamModel || duplicateModel) ? upstreamModel : undefined;
    const addsUsage = addStreamUsage && asksStreamUsage;
    const splices = attemptSplices(spooled.scanned, (m) => m.raw, model, addsUsage, listed);
    return { ...spooled.read(splices), addedStreamUsage: addsUsage };
  };
  return {
    body: { kind: 'stream', replayable: true, open },
    fields,
    recorded: () => {
      spooled.release();
      if (!record) return undefined;
      const { head, size } = spooled;
      return recordedBodyText(head, size);
    },
  };
}

/**
 * A streamed body as far as it arrived. The upstream may answer, or routing refuse it, before
 * the upload ends (and the connection is then closed, the rest unread): that body is truncated,
 * its size the declared length, or with none what arrived. One whose declared bytes all
 * arrived is whole, even when its end has not gone through the stream yet.
 */
function recordedPrefix({ bytes, total, ended }: CapturedPrefix, declared: number | undefined): RecordedRequestBody {
  const whole = ended || (declared !== undefined && total >= declared);
  return recordedBodyText(bytes, whole ? total : (declared ?? total), whole);
}

/** A body read whole, up to `bufferedJsonBytes`; for a key that records bodies, one cut short is recorded as far as it arrived. */
function readWhole(req: IncomingMessage, limits: BodyLimits, finish: (raw: Buffer) => PreparedBody, record: boolean, declared: number, idleTimeoutMs: number): Promise<PreparedBody> {
  const read = readBody(req, limits.bufferedJsonBytes, finish, idleTimeoutMs, record);
  return record ? read.catch((err: unknown) => refusedPrefix(err, declared)) : read;
}

/**
 * A JSON or small passthrough body refused with its first bytes, for a key that records
 * bodies: a malformed one as far as it was read, its size the declared length; one cut short
 * (too large, silent, its client gone) as far as it arrived, truncated, as a form cut short is.
 */
function refusedPrefix(err: unknown, declared: number | undefined): PreparedBody {
  if (!(err instanceof RefusedBodyPrefix)) throw err;
  if (err.refusal instanceof BodyRewriteError) return refusedBody(requestBodyFailure(err.refusal)!, recordedBodyText(err.head, declared ?? err.arrived));
  return { ...refusedBody(err.refusal, recordedPrefix({ bytes: err.head, total: err.arrived, ended: false }, declared)), cutShort: true };
}

function refusedBody(refusal: DataPlaneError, recorded: RecordedRequestBody | undefined): PreparedBody {
  return { body: { kind: 'none' }, fields: undefined, recorded: () => recorded, refusal };
}

function fieldsOf(members: readonly ScannedMember[]): Record<string, unknown> {
  // The last duplicate wins, as in JSON.parse; the scanner kept only its value.
  const last = new Map<string, ScannedMember>();
  for (const member of members) last.set(member.key, member);
  const fields: Record<string, unknown> = {};
  for (const key of ROUTING_MEMBERS) {
    const member = last.get(key);
    if (member === undefined) continue;
    if (member.raw !== undefined) fields[member.key] = JSON.parse(member.raw.toString('utf8'));
    // Too large to keep, only the type matters to routing: a string input is text, an object
    // (or number) is other, an empty object standing in for it; for a large array `[` (strings,
    // token ids or images) the kind is not known, so no rule on it applies. A large
    // response_format is a schema, not one of the words rules look at.
    else if (ROUTING_INPUT_MEMBERS.includes(member.key)) {
      if (member.first === QUOTE) fields[member.key] = '';
      else if (member.first !== 0x5b) fields[member.key] = {};
    } else if (member.key === 'model') throw modelNameTooLong();
    else if (member.key !== 'response_format') throw new DataPlaneError('invalid_request_body', `The top-level "${member.key}" member is larger than ${SMALL_MEMBER_BYTES} bytes.`);
  }
  return fields;
}

/**
 * A form is spooled as it arrives (see SpooledFormBody): the first attempt streams as the
 * upload does, and another one, after an upstream that provably rejected it or was never
 * reached, reads the same bytes again from the file, with its own model.
 */
async function streamMultipart(req: IncomingMessage, contentType: string, declared: number | undefined, record: boolean, limits: BodyLimits, idleTimeoutMs: number): Promise<PreparedBody> {
  const tee = capturePrefix(req, record ? RECORD_PREFIX_BYTES : 0, limits.maxBodyBytes, idleTimeoutMs);
  let form: SpooledFormBody;
  let model: FormModel;
  try {
    form = new SpooledFormBody(tee.stream, contentType, limits.spoolDir ?? tmpdir());
    model = await form.ready;
  } catch (err) {
    // Anything but a verdict on the form or a spool file failure (spool_unavailable, ours)
    // comes from the client's connection, unless it is still there: then it is a bug of ours.
    const refusal = requestBodyFailure(err) ?? (req.destroyed ? new DataPlaneError('client_closed', 'Its body had not ended.') : undefined);
    // Whatever the field order (docs: step 10): a malformed form is read on to its end or first
    // MiB before the answer, as a spooled JSON body is, so that a chunked one is not recorded
    // whole by the bytes that had arrived. One whose spool failed (answered at once, the
    // gateway's failure) and one cut short (too large, silent, its client gone) are recorded
    // as far as they arrived, truncated unless they had ended.
    const captured = refusal !== undefined && record && err instanceof BodyRewriteError ? await tee.readOn() : tee.captured();
    tee.stream.destroy();
    req.resume();
    if (refusal === undefined) throw err;
    if (!record) throw refusal;
    const recorded = refusedBody(refusal, recordedPrefix(captured, declared));
    return err instanceof BodyRewriteError || err instanceof SpoolFailure ? recorded : { ...recorded, cutShort: true };
  }
  const streamRefusal = formStreamRefusal(model.fields);
  if (streamRefusal !== undefined) {
    // As a routing refusal of the form: answered once the key as it is has been read, the form released then.
    return {
      ...refusedBody(streamRefusal, undefined),
      streamed: true,
      recorded: () => {
        form.release();
        return record ? recordedPrefix(tee.captured(), declared) : undefined;
      },
    };
  }
  const fields: Record<string, unknown> = Object.fromEntries(model.fields);
  const span = model.model;
  if (span !== undefined) fields['model'] = span.value;
  return {
    body: {
      kind: 'stream',
      replayable: true,
      open: async (upstreamModel) => {
        const splices = span === undefined || upstreamModel === null ? [] : [formModelSplice(span, upstreamModel)];
        const stream = form.read(splices);
        if (declared === undefined) return { stream };
        return { stream, length: declared + spliceDelta(splices) };
      },
    },
    fields,
    streamed: true,
    recorded: () => {
      form.release();
      if (!record) return undefined;
      return recordedPrefix(tee.captured(), declared);
    },
  };
}
