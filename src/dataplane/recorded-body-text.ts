import { isUtf8 } from 'node:buffer';
import type { RecordedRequestBody } from '../store/logs/index.ts';

/**
 * What the log keeps of a body's bytes (spec section 2 rule 2: the original, not a summary):
 * valid UTF-8 as its text, anything else (a binary upload, a form with files) as base64, so
 * that no byte is lost either way. A prefix of a longer body may end inside a character: that
 * incomplete sequence is left out before deciding, so that a cut text stays text. A body that
 * had not ended (its upstream answered first) is truncated even when all that arrived was kept.
 */
export function recordedBodyText(bytes: Buffer, originalBytes: number, ended = true): RecordedRequestBody {
  const truncated = !ended || bytes.length < originalBytes;
  const kept = truncated ? bytes.subarray(0, completeUtf8Length(bytes)) : bytes;
  const state = truncated ? 'truncated' : 'recorded';
  return isUtf8(kept) ? { state, original_bytes: originalBytes, body: kept.toString('utf8') } : { state, original_bytes: originalBytes, body: bytes.toString('base64'), encoding: 'base64' };
}

/** The length without a trailing lead byte whose continuation bytes were cut off. */
function completeUtf8Length(bytes: Buffer): number {
  // A UTF-8 character is at most 4 bytes: its lead byte is among the last 4.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}
