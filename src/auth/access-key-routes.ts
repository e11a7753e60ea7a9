/**
 * Spec section 5 item 3: the only management routes an AccessKey may call (route patterns
 * as registered on the router, under /api). Every other route answers 403 FORBIDDEN.
 */
export const ACCESS_KEY_ROUTES: readonly string[] = [
  'GET /api/auth/session',
  'GET /api/home',
  'GET /api/home/statistics',
  'GET /api/models',
  'GET /api/usage',
  'GET /api/logs',
  'GET /api/logs/:request_id',
];

export function accessKeyMayCall(method: string, routePattern: string): boolean {
  // HEAD is answered by the GET route and carries the same permission.
  const m = method === 'HEAD' ? 'GET' : method;
  return ACCESS_KEY_ROUTES.includes(`${m} ${routePattern}`);
}
