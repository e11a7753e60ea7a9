import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

/** What can be told of a request node's parser refused: enough to choose the plane and error shape that answer it. */
export interface RequestHead {
  method: string;
  /** As sent, or in origin form once the server has read it (src/server/origin-form.ts). */
  target: string;
  headers: IncomingHttpHeaders;
}

/**
 * `METHOD SP target SP HTTP/x.y`, loosely: a lowercase method or raw non-ASCII bytes are what was
 * refused. The method is the letters before the target, not the whole start of the line: the
 * end of a body pipelined just before, with no line end of its own, runs into it (`{}HEAD`). Only
 * what has no space may come before it, so that a header quoting a request line (`x-note: see GET
 * /a HTTP/1.1`) or a target with a space in it (`GET /a b HTTP/1.1`) is no request line.
 */
const REQUEST_LINE = /^[^ ]*?([A-Za-z][A-Za-z-]*) (\S+) HTTP\/\d\.\d$/;
/**
 * A request line at the end of a line whatever comes before it: the last line of a pipelined
 * body that has spaces (`{"model": "m"}HEAD ...`, as python's json.dumps writes), which only
 * counts in a body (liesInBody).
 */
const ENDING_REQUEST_LINE = /([A-Za-z][A-Za-z-]*) (\S+) HTTP\/\d\.\d$/;

/**
 * The head of the request a parser error (`clientError`) is about: that of `inBody`, the
 * request being served on the connection, when its body is what failed; else read from the
 * bytes node was parsing (`rawPacket`), back from where it stopped (`bytesParsed`) to the
 * nearest request line, so that a request pipelined behind another is the one read. Undefined
 * when there are no such bytes (the headers deadline) or no request line in them (a head
 * longer than one read).
 */
export function failedRequestHead(err: { rawPacket?: unknown; bytesParsed?: unknown }, inBody: IncomingMessage | undefined): RequestHead | undefined {
  if (inBody !== undefined) return { method: inBody.method ?? 'GET', target: inBody.url ?? '/', headers: inBody.headers };
  if (!Buffer.isBuffer(err.rawPacket)) return undefined;
  const lines = err.rawPacket.toString('latin1').split('\n');
  const stop = typeof err.bytesParsed === 'number' ? err.bytesParsed : err.rawPacket.length;
  // The line holding the byte the parser stopped before (or at the packet's end), then back.
  let at = 0;
  let last = 0;
  while (last < lines.length - 1 && at + lines[last]!.length + 1 <= stop) at += lines[last++]!.length + 1;
  for (let i = last; i >= 0; i--) {
    const text = lines[i]!.replace(/\r$/, '');
    const line = REQUEST_LINE.exec(text) ?? (liesInBody(lines, i) ? ENDING_REQUEST_LINE.exec(text) : null);
    if (line !== null) return { method: line[1]!, target: line[2]!, headers: headerFields(lines.slice(i + 1)) };
  }
  return undefined;
}

/** Whether line `i` lies in a body: a head's blank line comes before it, and no request line between. */
function liesInBody(lines: readonly string[], i: number): boolean {
  for (let k = i - 1; k >= 0; k--) {
    const text = lines[k]!.replace(/\r$/, '');
    if (text === '') return true;
    if (ENDING_REQUEST_LINE.test(text)) return false;
  }
  return false;
}

/** The header fields up to the head's end, names lowercased; the first of a repeated name, as node keeps most. */
function headerFields(lines: readonly string[]): IncomingHttpHeaders {
  const headers: Record<string, string> = {};
  for (const raw of lines) {
    const line = raw.replace(/\r$/, '');
    if (line === '') break;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] ??= line.slice(colon + 1).trim();
  }
  return headers;
}
