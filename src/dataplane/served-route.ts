import type { Resolution } from '../engine/index.ts';

/**
 * Why this version's data plane does not carry a route the engine resolves, or undefined when it
 * does: converted routes wait for protocol conversion. Shared by routing and `switchyard
 * resolve`, so the CLI never calls a route usable that the gateway refuses.
 */
export function unservedReason(resolution: Resolution): 'conversion_not_available' | undefined {
  return resolution.ok && resolution.effective === 'converted' ? 'conversion_not_available' : undefined;
}
