/**
 * A path parameter as it goes into an upstream path: percent-encoded, except that a catch-all
 * rest keeps its slashes (it is split at them and each segment encoded).
 */
export function encodePathParameter(value: string, rest: boolean): string {
  return rest ? value.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(value);
}
