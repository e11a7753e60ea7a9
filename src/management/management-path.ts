import { API_PREFIX } from './build-router.ts';

/** Whether a target in origin form is the management plane's (/api and below); every other path is the data plane's. */
export function isManagementPath(url: string): boolean {
  return url === API_PREFIX || url.startsWith(`${API_PREFIX}/`) || url.startsWith(`${API_PREFIX}?`);
}
