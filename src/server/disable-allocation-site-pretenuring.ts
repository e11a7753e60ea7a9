import { setFlagsFromString } from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring for the whole process (the log writer's thread
 * included). Under streaming load it sometimes decided to allocate a request's short-lived
 * objects in the old generation, and the process then stayed in a mode where every scavenge
 * promoted about 4.5 KB per request: about 8 µs more per streamed request, for as long as
 * the process ran. Set before the server handles anything; docs/data-plane-internals.md has
 * the measurements.
 */
export function disableAllocationSitePretenuring(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
