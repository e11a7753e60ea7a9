import type { Test } from 'tap';
import type { DataPlaneOptions } from '../../../src/dataplane/data-plane-deps.ts';
import { startDataPlane, type Gateway } from './data-plane-harness.ts';

/** The data plane with `options`, stopped at the test's end so no test leaves a server behind. */
export async function gateway(t: Test, options: Partial<DataPlaneOptions> = {}): Promise<Gateway> {
  const gw = await startDataPlane(options);
  t.teardown(() => gw.close());
  return gw;
}
