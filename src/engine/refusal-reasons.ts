/**
 * Every reason code the data plane answers with (route refusals first, then request and
 * upstream failures), with its HTTP status and its message. Data-plane messages are English only: the
 * clients are SDKs and programs, which read the code (management messages follow Accept-Language).
 * Route inspection shows the same codes. `retry: false` marks a 5xx the operator's configuration
 * causes: the same request fails the same way until that changes, so the SDKs are told not to
 * send it again (a 5xx is otherwise theirs to retry, twice by default).
 */
export const REFUSAL_REASONS = {
  unknown_protocol: { status: 400, message: 'Unknown protocol.' },
  unknown_operation: { status: 404, message: 'Unknown operation for this protocol.' },
  unknown_channel: { status: 400, message: 'Unknown channel.' },
  route_not_declared: { status: 400, message: 'The channel declares no route for this operation.' },
  not_a_conversation_channel: { status: 400, message: 'The channel is not a conversation channel.' },
  restricted_by_channel_note: { status: 400, message: 'The request is outside what a note of the channel matrix allows.' },
  operation_outside_native_subset: { status: 400, message: 'The channel supports only a subset of these operations natively.' },
  model_required: { status: 400, message: 'This route depends on the model; a model is required.' },
  conversion_not_available: { status: 400, message: 'Protocol conversion for this route is not available in this version.' },
  protocol_not_allowed: { status: 403, message: 'The access key does not allow this protocol.' },
  model_not_visible: { status: 404, message: 'The model does not exist or is not visible to this access key.' },
  // Another key's stored object answers as an id no one holds: whether it exists is not told.
  resource_not_found: { status: 404, message: 'No such object for this access key.' },
  access_key_invalid: { status: 401, message: 'Missing or invalid access key.' },
  access_key_disabled: { status: 403, message: 'The access key is disabled.' },
  access_key_expired: { status: 403, message: 'The access key has expired.' },
  quota_exceeded: { status: 429, message: 'The access key has used up its quota.' },
  no_available_credential: { status: 503, message: 'No upstream credential is available for this route right now.' },
  upstream_base_url_missing: { status: 502, message: 'The group has no upstream base URL configured.', retry: false },
  route_not_found: { status: 404, message: 'Unknown endpoint.' },
  invalid_path_parameter: { status: 400, message: 'A path parameter is malformed (bad percent-encoding, a "." or ".." segment, a "/" in a stored object\'s id, or a model name too long).' },
  method_not_allowed: { status: 405, message: 'Method not allowed for this endpoint.' },
  invalid_query_parameter: { status: 400, message: 'A query parameter is malformed or out of range.' },
  // Google's `alt=proto` or `alt=media`: an answer in a format whose usage the gateway cannot read would go uncounted.
  unsupported_response_format: { status: 400, message: 'The response format asked for (alt, callback) is not supported: use json, or sse for a stream.' },
  // node's parser refused the request's head before any handler ran (src/http/parser-failure.ts); the connection is closed.
  malformed_request: { status: 400, message: 'The request is not valid HTTP/1.1 (its request line or a header); the connection is closed.' },
  request_headers_too_large: { status: 431, message: 'The request headers are too large; the connection is closed.' },
  request_headers_timeout: { status: 408, message: 'The request headers did not arrive in time; the connection is closed.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_request_body: { status: 400, message: 'The request body is not what this endpoint accepts.' },
  model_missing: { status: 400, message: 'The request names no model.' },
  request_timeout: { status: 408, message: 'The request body stopped arriving before it ended.' },
  request_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_content_encoding: { status: 415, message: 'The request body must not be compressed (Content-Encoding other than identity).' },
  // RFC 9112 §6.1: a transfer coding the server does not understand is answered 501.
  unsupported_transfer_coding: { status: 501, message: 'The request body uses a transfer coding the gateway does not support (Transfer-Encoding other than chunked).' },
  invalid_websocket_handshake: { status: 400, message: 'The request is not a valid WebSocket opening handshake.' },
  subprotocol_not_accepted: { status: 400, message: 'The upstream accepted none of the offered WebSocket subprotocols.' },
  internal_error: { status: 500, message: 'Internal error.' },
  upstream_unreachable: { status: 502, message: 'No upstream could be reached.' },
  // The upstream answered 101 but broke the opening handshake (RFC 6455 §4.1): its fault, not the credential's.
  upstream_handshake_invalid: { status: 502, message: 'The upstream accepted the WebSocket upgrade with an invalid handshake.' },
  // The disk is full or the spool directory unusable: not a bug, and another attempt could not do better.
  spool_unavailable: { status: 503, message: 'The gateway cannot store the request body right now.' },
  // A Group maps the model to a name a form field cannot carry (CR or LF would end the field).
  model_mapping_unusable: { status: 502, message: 'The Group maps the model to a name that cannot be sent in this request.', retry: false },
  // A stored secret holds a character an HTTP header value cannot carry (stored before import refused such values).
  credential_unusable: { status: 502, message: 'The upstream credential cannot be sent: its stored secret holds a character an HTTP header cannot carry.', retry: false },
  proxy_misconfigured: { status: 502, message: 'The managed proxy configured for this route cannot be used (unsupported scheme, malformed URL, or a login its scheme cannot carry).', retry: false },
  proxy_unreachable: { status: 502, message: 'The managed proxy for this route could not be reached or refused the gateway.' },
  log_store_unavailable: { status: 503, message: 'The request log store is failing, so the access key\'s quota cannot be enforced.' },
  shutting_down: { status: 503, message: 'The gateway is shutting down.' },
  // Ends an open WebSocket session (1012): its credential or Group was deleted, disabled or rotated; a new session is routed afresh.
  credential_withdrawn: { status: 503, message: 'The upstream credential or Group this session was routed to has been withdrawn; open a new session.' },
  upstream_timeout: { status: 504, message: 'The upstream did not answer in time.' },
  // An answer the gateway ended (step 9): as a stream's error event, or as the HTTP error when it failed before its first byte.
  upstream_idle_timeout: { status: 504, message: 'The upstream stopped sending; the answer was ended.' },
  upstream_stream_broken: { status: 502, message: "The upstream's answer broke off." },
  // Never sent (the client is gone); 499 is the log's conventional "client closed request".
  client_closed: { status: 499, message: 'The client closed the request before it was answered.' },
} as const satisfies Record<string, { status: number; message: string; retry?: false }>;

export type RefusalReason = keyof typeof REFUSAL_REASONS;
