import { serializeSse } from './serialize-sse.ts';
import type { StreamFailure } from './stream-failure.ts';

export type StreamErrorStyle = 'completions' | 'responses' | 'messages' | 'generate';

export interface StreamErrorOptions {
  /** responses style: the next `sequence_number` of the stream (default 0). */
  sequenceNumber?: number;
}

/**
 * The SSE text that ends a client stream cleanly in the client's own protocol, shaped so the
 * official SDKs raise their typed error. Write it, then end the response.
 */
export function streamErrorEvent(style: StreamErrorStyle, failure: StreamFailure, options: StreamErrorOptions = {}): string {
  switch (style) {
    case 'completions':
      return serializeSse({ data: { error: { message: failure.message, type: failure.words.completions, code: failure.code, param: null } } });
    case 'responses':
      return serializeSse({
        event: 'error',
        data: { type: 'error', code: failure.code, message: failure.message, param: null, sequence_number: options.sequenceNumber ?? 0 },
      });
    case 'messages':
      return serializeSse({
        event: 'error',
        // `details.error_code`, as in a refusal's body: where the SDK reads APIError.errorCode. No
        // `request_id`: the vendor's stream error event has none (the SDK reads the header).
        data: { type: 'error', error: { type: failure.words.messages, message: failure.message, code: failure.code, details: { error_code: failure.code } } },
      });
    case 'generate':
      return serializeSse({ data: generateErrorBody(failure) });
  }
}

/**
 * Closing text for a generate stream framed as one JSON array (no `alt=sse`): an error
 * element, then the closing bracket. `elementsSent` counts elements already written after '['.
 */
export function jsonArrayStreamErrorTail(failure: StreamFailure, elementsSent: number): string {
  return `${elementsSent > 0 ? ',\r\n' : ''}${JSON.stringify(generateErrorBody(failure))}]`;
}

function generateErrorBody(failure: StreamFailure): object {
  return {
    error: {
      code: failure.status,
      message: failure.message,
      status: failure.words.generate,
      // ErrorInfo is where Google-style errors carry a machine-readable reason.
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: failure.code, domain: 'switchyard' }],
    },
  };
}
