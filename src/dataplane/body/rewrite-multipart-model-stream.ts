import type { Readable } from 'node:stream';
import type { ModelRewrite } from './model-rewrite.ts';
import { MultipartModelScanner } from './multipart-model-scanner.ts';
import { spliceModelStream } from './splice-model-stream.ts';
import { multipartBoundary } from './spooled-form-body.ts';

export interface MultipartModelStreamOptions {
  /** The request's Content-Type header; it carries the boundary. */
  readonly contentType: string | undefined;
  /** Bytes kept in memory while the `model` field is looked for; past them the form is spooled. */
  readonly maxPrefixBytes: number;
  /** Where a form whose model field comes after maxPrefixBytes is spooled until it does. */
  readonly spoolDir: string;
}

export interface MultipartModelRewrite extends ModelRewrite {
  /**
   * Text fields (no filename, at most SMALL_FIELD_BYTES) that ended before the model field, or
   * before the end of a body without one. Fields after the model are not seen: that would mean
   * buffering the files between them. Clients put `stream`, `n` or `response_format` anywhere,
   * so a rule that needs one must treat its absence here as unknown, not as the default.
   */
  readonly fields: ReadonlyMap<string, string>;
}

/**
 * Resolves once the `model` field (a part named "model" without a filename) has been read, then
 * streams the rest unchanged. The official SDKs put the file before the model, so a field
 * after maxPrefixBytes is waited for with the bytes before it spooled to a file (see
 * spliceModelStream). Rejects with BodyRewriteError ('invalid_multipart'), a spool file error
 * or the source's own error; the body from replaceModel() errors with 'invalid_multipart' if
 * the tail is malformed or holds a second model field.
 */
export async function rewriteMultipartModelStream(
  source: Readable,
  options: MultipartModelStreamOptions,
): Promise<MultipartModelRewrite> {
  const scanner = new MultipartModelScanner(multipartBoundary(options.contentType));
  const rewrite = await spliceModelStream(source, scanner, options.maxPrefixBytes, options.spoolDir, (upstream) => {
    // A line break could start a delimiter line inside the value.
    if (/[\r\n]/.test(upstream)) throw new RangeError('a multipart model value cannot contain CR or LF');
    return Buffer.from(upstream, 'utf8');
  });
  return { model: rewrite.model, replaceModel: rewrite.replaceModel, release: rewrite.release, fields: scanner.fields };
}
