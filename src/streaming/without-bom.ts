const BOM = 0xfeff;

/** The UTF-8 bytes of a byte order mark. */
export const UTF8_BOM: readonly number[] = [0xef, 0xbb, 0xbf];

/**
 * An event's text without the byte order mark a stream may open with. The relay reads events
 * from their bytes as sent, so the stream's first event keeps it, where the SSE rules (and
 * SseParser's decoder) drop it: left in, it would hide that event's first field.
 */
export function withoutBom(text: string): string {
  return text.charCodeAt(0) === BOM ? text.slice(1) : text;
}
