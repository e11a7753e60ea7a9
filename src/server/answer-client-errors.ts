import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { drainingAfterAnswer } from '../http/drain-after-answer.ts';
import type { ServerLog } from '../http/error-middleware.ts';
import { failedRequestHead, type RequestHead } from '../http/failed-request-head.ts';
import { parserFailureEnvelope } from '../http/parser-failure-envelope.ts';
import { parserFailureOf, type ParserFailure } from '../http/parser-failure.ts';
import { isManagementPath } from '../management/management-path.ts';
import { originForm } from './origin-form.ts';

/** A parser failure's answer: node's status for it, a JSON body, and header fields of the plane's own (a request id). */
export interface ParserFailureReply {
  status: number;
  body: string;
  headers?: Readonly<Record<string, string>>;
}

/**
 * How a plane answers a parser failure, in its error shape. `req`: the request whose body was
 * refused once its handler ran (that handler's record is kept), else undefined.
 */
export type ParserFailureAnswer = (failure: ParserFailure, head: RequestHead | undefined, req: IncomingMessage | undefined) => ParserFailureReply;

type ParserError = NodeJS.ErrnoException & { rawPacket?: unknown; bytesParsed?: unknown };

/**
 * Answers what node's HTTP parser refuses (conflicting or malformed framing headers, a lowercase
 * method, raw non-ASCII bytes in the target, headers over the limit, a broken chunk, a head past
 * the headers deadline) as node would, with its status and `connection: close`, but with a JSON
 * body carrying a stable code instead of none: the management envelope for /api, else the data
 * plane's error shape (`dataPlane`), the completions shape when nothing of the head can be read.
 * Nothing is written where node writes nothing either: a connection gone or no longer writable,
 * or one whose answer has begun (or been sent, the rest of its body being drained: node wrote
 * a stray 400 after it). Without `dataPlane` every path is answered as the management plane's.
 */
export function answerClientErrors(server: Server, dataPlane: ParserFailureAnswer | undefined, log: ServerLog): void {
  server.on('clientError', (err: ParserError, socket: Socket) => {
    // Where node:http keeps the answer the connection is writing (its own clientError default reads it too).
    const answering = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
    if (err.code === 'ECONNRESET' || !socket.writable || answering?.headersSent === true || drainingAfterAnswer(socket)) return void socket.destroy(err);
    try {
      // The request whose body failed once its handler ran (the head was read from it), if it is one.
      const inBody = answering !== undefined && !answering.req.complete ? answering.req : undefined;
      const raw = failedRequestHead(err, inBody);
      const head = raw && { ...raw, target: originForm({ url: raw.target }) };
      const failure = parserFailureOf(err.code, inBody !== undefined);
      const management = dataPlane === undefined || (head !== undefined && isManagementPath(head.target));
      const reply: ParserFailureReply = management ? parserFailureEnvelope(failure, head) : dataPlane(failure, head, inBody);
      const { status, body, headers = {} } = reply;
      // Each plane's own headers: Koa's JSON type and `no-store` (every management answer's), or the data plane's type and request id.
      const own = management ? ['content-type: application/json; charset=utf-8', 'cache-control: no-store'] : ['content-type: application/json', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
      const fields = [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, ...own, `content-length: ${Buffer.byteLength(body)}`, 'connection: close'];
      // A HEAD is answered without the body its length is given for.
      socket.write(`${fields.join('\r\n')}\r\n\r\n${head?.method === 'HEAD' ? '' : body}`);
    } catch (error) {
      log(`switchyard: answering a request node's parser refused failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
    // With the parser's error, as node does: a body's reader reads the failure from it (brokenBodyFraming).
    socket.destroy(err);
  });
}
