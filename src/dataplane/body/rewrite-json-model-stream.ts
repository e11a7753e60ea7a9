import type { Readable } from 'node:stream';
import { JsonModelScanner } from './json-model-scanner.ts';
import type { ModelRewrite } from './model-rewrite.ts';
import { spliceModelStream } from './splice-model-stream.ts';

export interface JsonModelStreamOptions {
  /** Bytes that may be buffered before the top-level "model" member must have been read. */
  readonly maxPrefixBytes: number;
}

/**
 * Resolves as soon as the top-level "model" string member of a JSON body has been read (or the
 * top-level value has ended without one), holding only the bytes up to there. The rest is not
 * buffered: it streams through replaceModel()'s body, still validated as it passes, which then
 * errors with BodyRewriteError('invalid_json') on malformed JSON or a second top-level model.
 * Rejects with BodyRewriteError ('invalid_json', also for a non-string model, or
 * 'model_not_found_within_limit') or the source's own error.
 */
export function rewriteJsonModelStream(source: Readable, options: JsonModelStreamOptions): Promise<ModelRewrite> {
  return spliceModelStream(source, new JsonModelScanner(), options.maxPrefixBytes, (upstream) =>
    Buffer.from(JSON.stringify(upstream), 'utf8'),
  );
}
