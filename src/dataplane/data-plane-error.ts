import { REFUSAL_REASONS, type RefusalReason } from '../engine/index.ts';

/** Codes of data-plane failures that are not route refusals. */
export const DATA_PLANE_FAILURES = {
  route_not_found: { status: 404, en: 'Unknown endpoint.', zh: '未知的端点。' },
  method_not_allowed: { status: 405, en: 'Method not allowed for this endpoint.', zh: '此端点不允许该方法。' },
  invalid_json: { status: 400, en: 'The request body is not valid JSON.', zh: '请求体不是有效的 JSON。' },
  invalid_request_body: { status: 400, en: 'The request body is not what this endpoint accepts.', zh: '请求体不符合此端点的要求。' },
  model_missing: { status: 400, en: 'The request names no model.', zh: '请求没有指定模型。' },
  request_too_large: { status: 413, en: 'The request body is too large.', zh: '请求体过大。' },
  upstream_unreachable: { status: 502, en: 'No upstream could be reached.', zh: '无法连接任何上游。' },
  upstream_timeout: { status: 504, en: 'The upstream did not answer in time.', zh: '上游未及时响应。' },
  upstream_base_url_missing: { status: 400, en: 'The group has no upstream base URL configured.', zh: '该分组未配置上游基础地址。' },
} as const satisfies Record<string, { status: number; en: string; zh: string }>;

export type DataPlaneFailure = keyof typeof DATA_PLANE_FAILURES;
export type DataPlaneCode = RefusalReason | DataPlaneFailure;

/** A data-plane error before anything reached the client; rendered in the client's protocol. */
export class DataPlaneError extends Error {
  readonly status: number;
  constructor(
    readonly code: DataPlaneCode,
    detail?: string,
    readonly headers: Record<string, string> = {},
  ) {
    const entry = code in REFUSAL_REASONS ? REFUSAL_REASONS[code as RefusalReason] : DATA_PLANE_FAILURES[code as DataPlaneFailure];
    super(detail ? `${entry.en} ${detail}` : entry.en);
    this.status = entry.status;
  }
}
