import { WriteStream } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';

type WriteCallback = (error?: Error | null) => void;

/** Until the test ends, a write that takes a spool file past `limit` bytes fails with ENOSPC: a full disk, stood in for in this process, where the server runs. */
export function diskFullAfter(t: Test, limit: number): void {
  const proto = WriteStream.prototype as unknown as {
    _write(chunk: Buffer, encoding: BufferEncoding, cb: WriteCallback): void;
    _writev(chunks: { chunk: Buffer }[], cb: WriteCallback): void;
  };
  const { _write: write, _writev: writev } = proto;
  const full = (stream: WriteStream, bytes: number) => path.basename(String(stream.path)).startsWith('switchyard-body-') && stream.bytesWritten + bytes > limit;
  const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  proto._write = function (this: WriteStream, chunk, encoding, cb) {
    if (full(this, chunk.length)) return cb(enospc());
    write.call(this, chunk, encoding, cb);
  };
  proto._writev = function (this: WriteStream, chunks, cb) {
    if (full(this, chunks.reduce((sum, c) => sum + c.chunk.length, 0))) return cb(enospc());
    writev.call(this, chunks, cb);
  };
  t.teardown(() => {
    proto._write = write;
    proto._writev = writev;
  });
}
