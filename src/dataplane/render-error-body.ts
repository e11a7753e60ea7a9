import type { ProtocolEntry } from '../generated/index.ts';

type ErrorStyle = ProtocolEntry['error_style'];
import { ERROR_SHAPE_TABLE } from './error-shape-table.ts';

/** The error body a client of `style` parses, carrying the gateway's reason code. */
export function renderErrorBody(style: ErrorStyle, status: number, code: string, message: string): string {
  const names = ERROR_SHAPE_TABLE[status] ?? ERROR_SHAPE_TABLE.default;
  switch (style) {
    case 'completions':
      return JSON.stringify({ error: { message, type: names.completions, code, param: null } });
    case 'messages':
      // `details.error_code` is where the messages SDK reads a stable cause (APIError.errorCode).
      return JSON.stringify({ type: 'error', error: { type: names.messages, message, code, details: { error_code: code } } });
    case 'generate':
      return JSON.stringify({
        error: {
          code: status,
          message,
          status: names.generate,
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: code, domain: 'switchyard' }],
        },
      });
  }
}
