import { once } from 'node:events';
import type { ServerResponse } from 'node:http';

/** Writes with backpressure: waits for 'drain' (or the client closing) when the buffer is full. */
export async function writeChunk(res: ServerResponse, chunk: Uint8Array | string): Promise<void> {
  if (res.write(chunk)) return;
  await Promise.race([once(res, 'drain'), once(res, 'close')]);
}
