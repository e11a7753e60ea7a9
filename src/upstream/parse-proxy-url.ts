import { redactUrl } from './redact-url.ts';

/** How a managed proxy is spoken to: an HTTP CONNECT tunnel or SOCKS5. */
export type ProxyKind = 'connect' | 'socks';

/** The proxy schemes the gateway speaks, by URL protocol. */
const PROXY_KIND_BY_SCHEME: Readonly<Record<string, ProxyKind>> = {
  'http:': 'connect',
  'https:': 'connect',
  'socks5:': 'socks',
  'socks5h:': 'socks',
  'socks:': 'socks',
};

/** The schemes named to operators (`socks:` is kept as a SOCKS5 alias, not advertised). */
export const SUPPORTED_PROXY_SCHEMES: readonly string[] = ['http', 'https', 'socks5', 'socks5h'];

/** Why a proxy URL cannot be used; the management API reports it as `data.reason`. */
export type ProxyUrlProblem =
  | 'invalid_proxy_url'
  | 'unsupported_proxy_scheme'
  | 'proxy_host_missing'
  | 'proxy_port_invalid'
  | 'proxy_path_not_allowed'
  | 'proxy_credentials_too_long';

/** RFC 1929: a SOCKS5 user name and password are each sent with a one-byte length. */
const SOCKS5_LOGIN_MAX_BYTES = 255;

/** The first of a SOCKS5 login's decoded user and password that is too long to send, if either is. */
function socksLoginTooLong(user: string, password: string): 'user' | 'password' | undefined {
  if (Buffer.byteLength(user) > SOCKS5_LOGIN_MAX_BYTES) return 'user';
  if (Buffer.byteLength(password) > SOCKS5_LOGIN_MAX_BYTES) return 'password';
  return undefined;
}

/** Error code of InvalidProxyUrlError, by which classifyUpstreamError knows it. */
export const INVALID_PROXY_URL = 'ERR_INVALID_PROXY_URL';

/** A proxy URL the gateway cannot use: the operator's configuration, not the upstream, is at fault. */
export class InvalidProxyUrlError extends TypeError {
  readonly code = INVALID_PROXY_URL;
  constructor(
    readonly problem: ProxyUrlProblem,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'InvalidProxyUrlError';
  }
}

/**
 * A usable proxy URL. `authorization`: the Basic `Proxy-Authorization` value its user and
 * password make, when either is set (a user without a password sends `user:`), one rule for
 * HTTP routes and WebSocket tunnels alike.
 */
export interface ParsedProxyUrl {
  url: URL;
  kind: ProxyKind;
  authorization: string | undefined;
}

type Checked = (ParsedProxyUrl & { problem?: undefined }) | { problem: ProxyUrlProblem; message: string };

/** One check for configuration time and request time alike, so both accept the same URLs. */
function checkProxyUrl(proxy: string): Checked {
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    return { problem: 'invalid_proxy_url', message: `invalid proxy URL ${redactUrl(proxy)}` };
  }
  const kind = PROXY_KIND_BY_SCHEME[url.protocol];
  const use = `use ${SUPPORTED_PROXY_SCHEMES.join(', ')}`;
  if (kind === undefined) return { problem: 'unsupported_proxy_scheme', message: `unsupported proxy scheme ${url.protocol} (${use})` };
  // Only special schemes (http, https) make the URL parser insist on a host; socks5:// does not.
  if (url.hostname === '') return { problem: 'proxy_host_missing', message: `proxy URL ${redactUrl(proxy)} names no host` };
  if (url.port === '0') return { problem: 'proxy_port_invalid', message: `proxy URL ${redactUrl(proxy)} has port 0` };
  // undici takes an HTTP proxy's URL as an origin and refuses anything more; a SOCKS5 proxy has no use for it either.
  // `?` and `#` are percent-encoded in the userinfo, so any left in the serialized URL begin a query or fragment.
  if ((url.pathname !== '' && url.pathname !== '/') || /[?#]/.test(url.href)) {
    return { problem: 'proxy_path_not_allowed', message: `proxy URL ${redactUrl(proxy)} has a path, query or fragment (give only scheme, credentials, host and port)` };
  }
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    return { problem: 'invalid_proxy_url', message: `proxy URL ${redactUrl(proxy)} has a user or password that is not valid percent-encoding` };
  }
  const tooLong = kind === 'socks' ? socksLoginTooLong(user, password) : undefined;
  if (tooLong !== undefined) {
    return { problem: 'proxy_credentials_too_long', message: `proxy URL ${redactUrl(proxy)} has a ${tooLong} over ${SOCKS5_LOGIN_MAX_BYTES} bytes (UTF-8), more than SOCKS5 can send` };
  }
  const authorization = url.username === '' && url.password === '' ? undefined : `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  return { url, kind, authorization };
}

/** Why `proxy` would be refused at request time (credentials redacted), or undefined when it is usable. */
export function proxyUrlProblem(proxy: string): { problem: ProxyUrlProblem; message: string } | undefined {
  const checked = checkProxyUrl(proxy);
  return checked.problem === undefined ? undefined : checked;
}

/** A managed proxy's URL and kind, or an InvalidProxyUrlError that names it without its credentials. */
export function parseProxyUrl(proxy: string): ParsedProxyUrl {
  const checked = checkProxyUrl(proxy);
  if (checked.problem !== undefined) throw new InvalidProxyUrlError(checked.problem, checked.message);
  return checked;
}
