/** A URL safe to log or show: user info and query values removed, and all but the scheme of one with no host. */
export function redactUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    return '[invalid url]';
  }
  // No host: the rest is an opaque path (`socks5:user:pw@host`, written without `//`), which may hold a login.
  if (parsed.host === '') return `${parsed.protocol}***`;
  if (parsed.username !== '' || parsed.password !== '') {
    parsed.username = '***';
    parsed.password = '';
  }
  for (const name of [...new Set(parsed.searchParams.keys())]) parsed.searchParams.set(name, '***');
  return parsed.toString();
}
