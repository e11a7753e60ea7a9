import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { copyRepo, runTs } from '../../helpers/repo-copy.ts';

/**
 * ch10, the only x-live channel, takes only OAuth credentials, which are served once the adapters
 * issue brings the authorization flows. Its sessions are run from a copy of the checkout whose
 * manifest also lists an `api_key` credential for ch10 (codegen run in the copy), the gateway
 * started from the copy's sources; the rest of the x-live path is as it ships. Returns the copy's
 * data-plane harness; the copy is removed when the file's tests end.
 */
export async function liveChannelHarness(): Promise<typeof import('./data-plane-harness.ts')> {
  const copy = copyRepo();
  t.teardown(copy.remove);
  const manifest = path.join(copy.dir, 'manifests/channels.yaml');
  const channels = readFileSync(manifest, 'utf8');
  const withApiKey = channels.replace(/(\n  - id: ch10\n    credential_kinds: \[[^\]\n]*)\]/, '$1, api_key]');
  if (withApiKey === channels) throw new Error('ch10 and its credential_kinds line not found in manifests/channels.yaml');
  writeFileSync(manifest, withApiKey);
  const codegen = runTs(copy.dir, 'src/cli/main.ts', ['codegen']);
  if (codegen.status !== 0) throw new Error(`codegen in the copy failed: ${codegen.stderr}`);
  return (await import(path.join(copy.dir, 'test/dataplane/helpers/data-plane-harness.ts'))) as typeof import('./data-plane-harness.ts');
}
