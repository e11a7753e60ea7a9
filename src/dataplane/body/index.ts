export { BodyRewriteError } from './body-rewrite-error.ts';
export type { BodyRewriteErrorCode } from './body-rewrite-error.ts';
export type { ModelRewrite, RewrittenBody } from './model-rewrite.ts';
export { rewriteJsonModelStream } from './rewrite-json-model-stream.ts';
export type { JsonModelStreamOptions } from './rewrite-json-model-stream.ts';
export { rewriteMultipartModelStream } from './rewrite-multipart-model-stream.ts';
export type { MultipartModelRewrite, MultipartModelStreamOptions } from './rewrite-multipart-model-stream.ts';
export { SMALL_FIELD_BYTES } from './multipart-model-scanner.ts';
