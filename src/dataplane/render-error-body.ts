import type { ProtocolEntry } from '../generated/index.ts';

type ErrorStyle = ProtocolEntry['error_style'];
import { errorShapeOf } from './error-shape-table.ts';

/**
 * The error body a client of `style` parses, carrying the gateway's reason code; the messages
 * style also carries `requestId` at its top level, as its vendor's errors do (null for an answer
 * no record is kept of: a request node's parser refused).
 */
export function renderErrorBody(style: ErrorStyle, status: number, code: string, message: string, requestId: string | null): string {
  const names = errorShapeOf(status);
  switch (style) {
    case 'completions':
      return JSON.stringify({ error: { message, type: names.completions, code, param: null } });
    case 'messages':
      // `details.error_code` is where the messages SDK reads a stable cause (APIError.errorCode).
      return JSON.stringify({ type: 'error', error: { type: names.messages, message, code, details: { error_code: code } }, request_id: requestId });
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
