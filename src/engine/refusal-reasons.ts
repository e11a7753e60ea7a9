/**
 * Every reason code the data plane answers with (route refusals first, then request and
 * upstream failures), with its HTTP status and the message in each supported language.
 * Route inspection shows the same codes.
 */
export const REFUSAL_REASONS = {
  unknown_protocol: { status: 400, en: 'Unknown protocol.', zh: '未知的协议。' },
  unknown_operation: { status: 404, en: 'Unknown operation for this protocol.', zh: '该协议没有此操作。' },
  unknown_channel: { status: 400, en: 'Unknown channel.', zh: '未知的渠道。' },
  route_not_declared: { status: 400, en: 'The channel declares no route for this operation.', zh: '该渠道没有为此操作声明路由。' },
  not_a_conversation_channel: { status: 400, en: 'The channel is not a conversation channel.', zh: '该渠道不是对话渠道。' },
  restricted_by_channel_note: { status: 400, en: 'The request is outside what a note of the channel matrix allows.', zh: '请求超出了渠道矩阵注释允许的范围。' },
  operation_outside_native_subset: { status: 400, en: 'The channel supports only a subset of these operations natively.', zh: '该渠道只原生支持这些操作的一个子集。' },
  model_required: { status: 400, en: 'This route depends on the model; a model is required.', zh: '此路由取决于模型，需要提供模型。' },
  conversion_not_available: { status: 400, en: 'Protocol conversion for this route is not available in this version.', zh: '此版本尚未提供该路由的协议转换。' },
  protocol_not_allowed: { status: 403, en: 'The access key does not allow this protocol.', zh: '访问密钥不允许此协议。' },
  model_not_visible: { status: 404, en: 'The model does not exist or is not visible to this access key.', zh: '模型不存在或对此访问密钥不可见。' },
  // Another key's stored object answers as an id no one holds: whether it exists is not told.
  resource_not_found: { status: 404, en: 'No such object for this access key.', zh: '此访问密钥下没有该对象。' },
  access_key_invalid: { status: 401, en: 'Missing or invalid access key.', zh: '缺少访问密钥或访问密钥无效。' },
  access_key_disabled: { status: 403, en: 'The access key is disabled.', zh: '访问密钥已被停用。' },
  access_key_expired: { status: 403, en: 'The access key has expired.', zh: '访问密钥已过期。' },
  quota_exceeded: { status: 429, en: 'The access key has used up its quota.', zh: '访问密钥的配额已用尽。' },
  no_available_credential: { status: 503, en: 'No upstream credential is available for this route right now.', zh: '当前没有可用于此路由的上游凭据。' },
  upstream_base_url_missing: { status: 502, en: 'The group has no upstream base URL configured.', zh: '该分组未配置上游基础地址。' },
  route_not_found: { status: 404, en: 'Unknown endpoint.', zh: '未知的端点。' },
  invalid_path_parameter: { status: 400, en: 'A path parameter is malformed (bad percent-encoding, a "." or ".." segment, a "/" in a stored object\'s id, or a model name too long).', zh: '路径参数格式错误（百分号编码无效，含有 "." 或 ".." 段，存储对象的 ID 中含有 "/"，或模型名称过长）。' },
  method_not_allowed: { status: 405, en: 'Method not allowed for this endpoint.', zh: '此端点不允许该方法。' },
  invalid_query_parameter: { status: 400, en: 'A query parameter is malformed or out of range.', zh: '查询参数格式错误或超出范围。' },
  // Google's `alt=proto` or `alt=media`: an answer in a format whose usage the gateway cannot read would go uncounted.
  unsupported_response_format: { status: 400, en: 'The response format asked for (alt, callback) is not supported: use json, or sse for a stream.', zh: '不支持所请求的响应格式（alt、callback）：请使用 json，流式请求使用 sse。' },
  invalid_json: { status: 400, en: 'The request body is not valid JSON.', zh: '请求体不是有效的 JSON。' },
  invalid_request_body: { status: 400, en: 'The request body is not what this endpoint accepts.', zh: '请求体不符合此端点的要求。' },
  model_missing: { status: 400, en: 'The request names no model.', zh: '请求没有指定模型。' },
  request_timeout: { status: 408, en: 'The request body stopped arriving before it ended.', zh: '请求体在结束前停止了传输。' },
  request_too_large: { status: 413, en: 'The request body is too large.', zh: '请求体过大。' },
  unsupported_content_encoding: { status: 415, en: 'The request body must not be compressed (Content-Encoding other than identity).', zh: '请求体不能压缩（Content-Encoding 只能是 identity）。' },
  // RFC 9112 §6.1: a transfer coding the server does not understand is answered 501.
  unsupported_transfer_coding: { status: 501, en: 'The request body uses a transfer coding the gateway does not support (Transfer-Encoding other than chunked).', zh: '请求体使用了网关不支持的传输编码（Transfer-Encoding 只能是 chunked）。' },
  invalid_websocket_handshake: { status: 400, en: 'The request is not a valid WebSocket opening handshake.', zh: '请求不是有效的 WebSocket 握手。' },
  subprotocol_not_accepted: { status: 400, en: 'The upstream accepted none of the offered WebSocket subprotocols.', zh: '上游不接受所提供的任何 WebSocket 子协议。' },
  internal_error: { status: 500, en: 'Internal error.', zh: '内部错误。' },
  upstream_unreachable: { status: 502, en: 'No upstream could be reached.', zh: '无法连接任何上游。' },
  // The upstream answered 101 but broke the opening handshake (RFC 6455 §4.1): its fault, not the credential's.
  upstream_handshake_invalid: { status: 502, en: 'The upstream accepted the WebSocket upgrade with an invalid handshake.', zh: '上游接受了 WebSocket 升级，但其握手无效。' },
  // The disk is full or the spool directory unusable: not a bug, and another attempt could not do better.
  spool_unavailable: { status: 503, en: 'The gateway cannot store the request body right now.', zh: '网关当前无法暂存请求体。' },
  // A Group maps the model to a name a form field cannot carry (CR or LF would end the field).
  model_mapping_unusable: { status: 502, en: 'The Group maps the model to a name that cannot be sent in this request.', zh: '该分组映射的模型名称无法在此请求中发送。' },
  // A stored secret holds a character an HTTP header value cannot carry (stored before import refused such values).
  credential_unusable: { status: 502, en: 'The upstream credential cannot be sent: its stored secret holds a character an HTTP header cannot carry.', zh: '无法发送上游凭据：其存储的密钥含有 HTTP 头无法携带的字符。' },
  proxy_misconfigured: { status: 502, en: 'The managed proxy configured for this route cannot be used (unsupported scheme, malformed URL, or a login its scheme cannot carry).', zh: '为此路由配置的托管代理无法使用（不支持的协议、格式错误的 URL，或其协议无法携带的登录信息）。' },
  proxy_unreachable: { status: 502, en: 'The managed proxy for this route could not be reached or refused the gateway.', zh: '无法连接此路由的托管代理，或托管代理拒绝了网关。' },
  log_store_unavailable: { status: 503, en: 'The request log store is failing, so the access key\'s quota cannot be enforced.', zh: '请求日志存储出现故障，无法执行访问密钥的配额。' },
  shutting_down: { status: 503, en: 'The gateway is shutting down.', zh: '网关正在关闭。' },
  // Ends an open WebSocket session (1012): its credential or Group was deleted, disabled or rotated; a new session is routed afresh.
  credential_withdrawn: { status: 503, en: 'The upstream credential or Group this session was routed to has been withdrawn; open a new session.', zh: '此会话所路由到的上游凭据或分组已被撤下；请重新建立会话。' },
  upstream_timeout: { status: 504, en: 'The upstream did not answer in time.', zh: '上游未及时响应。' },
  // Never sent (the client is gone); 499 is the log's conventional "client closed request".
  client_closed: { status: 499, en: 'The client closed the request before it was answered.', zh: '客户端在得到响应前关闭了请求。' },
} as const satisfies Record<string, { status: number; en: string; zh: string }>;

export type RefusalReason = keyof typeof REFUSAL_REASONS;
