import type { SseMessage } from './sse-event.ts';

/** The terminator completions-style streams end with. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** One SSE block; multi-line data becomes several data lines. */
export function serializeSse(message: SseMessage): string {
  let out = '';
  if (message.comment !== undefined) {
    for (const line of message.comment.split(/\r\n|\r|\n/)) out += `: ${line}\n`;
  }
  if (message.event !== undefined) out += `event: ${singleLine(message.event)}\n`;
  if (message.id !== undefined) out += `id: ${singleLine(message.id)}\n`;
  if (message.retry !== undefined) out += `retry: ${Math.max(0, Math.trunc(message.retry))}\n`;
  if (message.data !== undefined) {
    const text = typeof message.data === 'string' ? message.data : JSON.stringify(message.data);
    for (const line of text.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  }
  return `${out}\n`;
}

// A line break inside a single-line field would start a new field.
function singleLine(value: string): string {
  return value.replace(/[\r\n]/g, ' ');
}
