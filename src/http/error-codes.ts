// The one table of management error codes: identifier -> HTTP status -> localized message.
// Clients branch on `code` (and `data`), never on the message text.

export type Locale = 'en' | 'zh-CN';

export interface ErrorCodeEntry {
  readonly status: number;
  readonly message: Readonly<Record<Locale, string>>;
}

export const ERROR_CODES = {
  UNAUTHORIZED: {
    status: 401,
    message: { en: 'Authentication required: send Authorization: Bearer <AUTH_KEY or AccessKey>.', 'zh-CN': '需要认证：请发送 Authorization: Bearer <AUTH_KEY 或 AccessKey>。' },
  },
  FORBIDDEN: {
    status: 403,
    message: { en: 'This credential is not allowed to call this route.', 'zh-CN': '当前凭据无权调用此路由。' },
  },
  AUTH_LOCKED: {
    status: 429,
    message: { en: 'Too many failed authentications from this address; try again later.', 'zh-CN': '此地址认证失败次数过多，请稍后再试。' },
  },
  INVALID_JSON: {
    status: 400,
    message: { en: 'The request body must be exactly one JSON object.', 'zh-CN': '请求体必须是且仅是一个 JSON 对象。' },
  },
  VALIDATION_FAILED: {
    status: 400,
    message: { en: 'The request failed validation.', 'zh-CN': '请求未通过校验。' },
  },
  IDEMPOTENCY_KEY_REQUIRED: {
    status: 428,
    message: { en: 'This operation requires an Idempotency-Key header.', 'zh-CN': '此操作需要 Idempotency-Key 请求头。' },
  },
  INVALID_IDEMPOTENCY_KEY: {
    status: 400,
    message: { en: 'Idempotency-Key must be exactly one canonical lowercase UUID v4.', 'zh-CN': 'Idempotency-Key 必须是唯一一个规范的小写 UUID v4。' },
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    message: { en: 'This Idempotency-Key was already used for a different request.', 'zh-CN': '此 Idempotency-Key 已用于另一个不同的请求。' },
  },
  IDEMPOTENCY_RESULT_EXPIRED: {
    status: 410,
    message: { en: 'The stored result for this Idempotency-Key has expired; use a new key.', 'zh-CN': '此 Idempotency-Key 的已存结果已过期，请使用新的键。' },
  },
  IDEMPOTENCY_OUTCOME_LOST: {
    status: 409,
    message: {
      en: 'An earlier attempt with this Idempotency-Key was applied, but its result was lost (a crash, or a failure after the change was saved); it was not applied again. Check the current state.',
      'zh-CN': '使用此 Idempotency-Key 的先前尝试已生效，但其结果已丢失（崩溃，或更改保存后出现故障）；未再次执行。请查看当前状态。',
    },
  },
  NOT_FOUND: {
    status: 404,
    message: { en: 'The requested resource does not exist.', 'zh-CN': '请求的资源不存在。' },
  },
  ROUTE_NOT_FOUND: {
    status: 404,
    message: { en: 'No management route has this path.', 'zh-CN': '没有此路径的管理路由。' },
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: { en: 'This route does not accept this HTTP method.', 'zh-CN': '此路由不接受该 HTTP 方法。' },
  },
  // node's parser refused the request before any route saw it (src/http/parser-failure.ts); its connection is closed.
  MALFORMED_REQUEST: {
    status: 400,
    message: {
      en: 'The request is not valid HTTP/1.1 (its request line, a header, or the framing of its body); the connection is closed.',
      'zh-CN': '请求不是有效的 HTTP/1.1（请求行、某个请求头或请求体的分帧有误）；连接已关闭。',
    },
  },
  REQUEST_HEADERS_TOO_LARGE: {
    status: 431,
    message: { en: 'The request headers are too large; the connection is closed.', 'zh-CN': '请求头过大；连接已关闭。' },
  },
  REQUEST_HEADERS_TIMEOUT: {
    status: 408,
    message: { en: 'The request headers did not arrive in time; the connection is closed.', 'zh-CN': '请求头未能及时到达；连接已关闭。' },
  },
  REQUEST_TOO_LARGE: {
    status: 413,
    message: { en: 'The request body is too large.', 'zh-CN': '请求体过大。' },
  },
  CONFLICT: {
    status: 409,
    message: { en: 'The request conflicts with the current state.', 'zh-CN': '请求与当前状态冲突。' },
  },
  BAD_GATEWAY: {
    status: 502,
    message: { en: 'An upstream or remote source failed.', 'zh-CN': '上游或远程来源请求失败。' },
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message: { en: 'This capability is not available in this deployment yet.', 'zh-CN': '此部署暂不提供该功能。' },
  },
  LOG_STORE_UNAVAILABLE: {
    status: 503,
    message: { en: 'The request log store is failing; try again later.', 'zh-CN': '请求日志存储出现故障，请稍后再试。' },
  },
  CONFIG_STORE_UNAVAILABLE: {
    status: 503,
    message: { en: 'The configuration could not be saved; it was left unchanged. Try again later.', 'zh-CN': '配置无法保存，已保持不变，请稍后再试。' },
  },
  INTERNAL_SERVER_ERROR: {
    status: 500,
    message: { en: 'Internal server error.', 'zh-CN': '服务器内部错误。' },
  },
} as const satisfies Record<string, ErrorCodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const SUCCESS_MESSAGE: Readonly<Record<Locale, string>> = { en: 'OK', 'zh-CN': '成功' };

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}
