import { withoutBom } from './without-bom.ts';

const LINE_END = /\r\n|\r|\n/;
const COLON = 58;
const SPACE = 32;

/**
 * The data of one SSE event's text (its `data` lines joined with LF, as the WHATWG rules
 * have it), or undefined when it has none. A lighter read than SseParser for the few events
 * whose payload the relay has to look into. The BOM a stream opens with is not part of it.
 */
export function sseEventData(event: string): string | undefined {
  const text = withoutBom(event);
  // Nearly every event: one `data: ` line and the blank line.
  if (text.startsWith('data: ') && text.indexOf('\n') === text.length - 2 && text.endsWith('\n\n') && !text.includes('\r')) return text.slice(6, -2);
  let data: string | undefined;
  for (const line of text.split(LINE_END)) {
    if (!line.startsWith('data')) continue;
    let value: string;
    if (line.length === 4) value = '';
    else if (line.charCodeAt(4) !== COLON) continue;
    else value = line.charCodeAt(5) === SPACE ? line.slice(6) : line.slice(5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}
