import { connect, type Socket } from 'node:net';
import type { Test } from 'tap';
import { withTimeout } from '../../dataplane/helpers/dataplane-scenarios.ts';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One client connection, written raw, whose answers are read one after the other. */
export function rawConnection(t: Test, port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  t.teardown(() => void socket.destroy());
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | undefined;
  socket.on('data', (d: Buffer) => {
    buffered = Buffer.concat([buffered, d]);
    wake?.();
  });
  socket.on('close', () => wake?.());
  const more = () => new Promise<void>((resolve) => (wake = resolve));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  async function next(): Promise<Answer> {
    for (;;) {
      const answer = takeAnswer();
      if (answer) return answer;
      if (socket.destroyed) throw new Error(`the connection closed; unread: ${buffered.toString('latin1')}`);
      await withTimeout(more(), 5000, 'an answer');
    }
  }
  /** The first whole answer in the buffer (content-length or chunked), taken off it. */
  function takeAnswer(): Answer | undefined {
    const end = buffered.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine, ...lines] = buffered.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)![1]);
    let at = end + 4;
    let body: Buffer;
    if (headers['transfer-encoding'] === 'chunked') {
      const chunks: Buffer[] = [];
      for (;;) {
        const lineEnd = buffered.indexOf('\r\n', at);
        if (lineEnd < 0) return undefined;
        const size = parseInt(buffered.subarray(at, lineEnd).toString('latin1'), 16);
        if (buffered.length < lineEnd + 2 + size + 2) return undefined;
        chunks.push(buffered.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(chunks);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (buffered.length < at + length) return undefined;
      body = buffered.subarray(at, at + length);
      at += length;
    }
    buffered = buffered.subarray(at);
    return { status, headers, body: body.toString('utf8') };
  }
  return { socket, next, closed, write: (text: string | Buffer) => socket.write(text), unread: () => buffered.length };
}
