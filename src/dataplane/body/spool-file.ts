import { randomUUID } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Splice } from './json-body-splices.ts';
import { SpoolFailure, warnSpoolFailure } from './spool-failure.ts';

/** A request body being written to a temporary file in the spool directory. */
export interface SpoolFile {
  readonly file: WriteStream;
  readonly path: string;
}

/**
 * A new file only the gateway's user can read. The name is the one resetSpoolDir removes at
 * start, whatever the body's type, so a file a crash left behind does not stay.
 */
export function createSpoolFile(dir: string): SpoolFile {
  const file = path.join(dir, `switchyard-body-${randomUUID()}.json`);
  return { file: createWriteStream(file, { flags: 'wx', mode: 0o600 }), path: file };
}

/** Stops writing and removes the file. */
export function discardSpoolFile(spool: SpoolFile): void {
  // Removed once closed: an open still under way would otherwise create the file afterwards.
  const remove = () => removeSpoolFile(spool.path);
  if (spool.file.closed) remove();
  else spool.file.once('close', remove).destroy();
}

/**
 * Removes a written file. A read already under way keeps its open descriptor and finishes; the
 * space is freed when it closes.
 */
export function removeSpoolFile(file: string): void {
  rm(file, { force: true }).catch(warnNotRemoved);
}

/** How much of a spool file one read takes. */
export const READ_BYTES = 64 * 1024;

/**
 * The first `size` bytes of `file` with `splices` (sorted, not overlapping) applied. The file
 * is opened on the first read, so a stream dropped unread holds no descriptor. A file that
 * cannot be read fails with a SpoolFailure: the gateway's, not the upstream's the body streams to.
 */
export async function* readSpliced(file: string, size: number, splices: readonly Splice[]): AsyncGenerator<Buffer> {
  const handle = await openSpoolFile(file);
  try {
    let at = 0;
    for (const splice of [...splices, { start: size, end: size, bytes: Buffer.alloc(0) }]) {
      while (at < splice.start) {
        const chunk = await readSpoolChunk(handle, at, Math.min(READ_BYTES, splice.start - at));
        yield chunk;
        at += chunk.length;
      }
      if (splice.bytes.length > 0) yield splice.bytes;
      at = splice.end;
    }
  } finally {
    await handle.close();
  }
}

/** Opens a spool file for reading; failing, with a SpoolFailure. */
export async function openSpoolFile(file: string): Promise<FileHandle> {
  try {
    return await open(file, 'r');
  } catch (error) {
    throw warnSpoolFailure(new SpoolFailure(error as Error));
  }
}

/**
 * Up to `want` bytes of the file from `at` (at least one): a file with none there, or that
 * cannot be read, fails with a SpoolFailure.
 */
export async function readSpoolChunk(handle: FileHandle, at: number, want: number): Promise<Buffer> {
  let bytesRead: number;
  let buffer: Buffer;
  try {
    ({ bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(want), 0, want, at));
  } catch (error) {
    throw warnSpoolFailure(new SpoolFailure(error as Error));
  }
  if (bytesRead === 0) throw warnSpoolFailure(new SpoolFailure('the file is shorter than it was'));
  return bytesRead === want ? buffer : buffer.subarray(0, bytesRead);
}

// A spool file that cannot be removed (permissions, a read-only disk) is reported, never thrown
// at a request that is over; the next start empties the directory.
function warnNotRemoved(error: NodeJS.ErrnoException): void {
  // Its directory is no directory any more (replaced by a file): the file went with it.
  if (error.code === 'ENOTDIR') return;
  process.emitWarning(`switchyard: a spooled request body could not be removed: ${error.message}`);
}
