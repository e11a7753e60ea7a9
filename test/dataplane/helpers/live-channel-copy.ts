import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import { copyRepo, runTs } from '../../helpers/repo-copy.ts';
import { eventually } from './dataplane-scenarios.ts';
import { startWsUpstream } from './ws-upstream.ts';

type Harness = typeof import('./data-plane-harness.ts');

/** The upstream credential's secret in `startLiveRoute`'s Group. */
export const LIVE_UPSTREAM_KEY = 'goog-upstream-key-0123456789';

/**
 * ch10, the only x-live channel, takes only OAuth credentials, which are served once the adapters
 * issue brings the authorization flows. Its sessions are run from a copy of the checkout whose
 * manifest also lists an `api_key` credential for ch10 (codegen run in the copy), the gateway
 * started from the copy's sources; the rest of the x-live path is as it ships. Returns the copy's
 * data-plane harness; the copy is removed when the file's tests end.
 */
export async function liveChannelHarness(): Promise<Harness> {
  const copy = copyRepo();
  t.teardown(copy.remove);
  const manifest = path.join(copy.dir, 'manifests/channels.yaml');
  const channels = readFileSync(manifest, 'utf8');
  const withApiKey = channels.replace(/(\n  - id: ch10\n    credential_kinds: \[[^\]\n]*)\]/, '$1, api_key]');
  if (withApiKey === channels) throw new Error('ch10 and its credential_kinds line not found in manifests/channels.yaml');
  writeFileSync(manifest, withApiKey);
  const codegen = runTs(copy.dir, 'src/cli/main.ts', ['codegen']);
  if (codegen.status !== 0) throw new Error(`codegen in the copy failed: ${codegen.stderr}`);
  return (await import(path.join(copy.dir, 'test/dataplane/helpers/data-plane-harness.ts'))) as Harness;
}

/**
 * A ch10 Group serving `live-voice` as `gemini-live-up` in front of a WebSocket upstream that
 * echoes (text as `echo:<text>`, binary as it came; or answers as `answers` says) and hands its
 * session over, on a gateway from `harness`; both stop when `t` ends. `wsUrl` carries the key
 * and one other query parameter.
 */
export async function startLiveRoute(harness: Harness, t: Test, quota?: Parameters<Harness['seedRoute']>[1]['quota'], answers?: Omit<NonNullable<Parameters<typeof startWsUpstream>[0]>, 'onSession'>) {
  let session: WebSocket | undefined;
  const upstream = await startWsUpstream({ ...answers, onSession: (ws) => (session = ws) });
  const gw = await harness.startDataPlane();
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
  });
  const seeded = await harness.seedRoute(gw.store, { channel: 'ch10', baseUrl: upstream.url, models: [{ external: 'live-voice', upstream: 'gemini-live-up' }], protocols: ['x-live'], upstreamKeys: [LIVE_UPSTREAM_KEY], quota });
  const wsUrl = `${gw.url.replace('http', 'ws')}/v1/live?model=live-voice&key=${seeded.keyValue}&session_hint=a1`;
  const upstreamSession = () => eventually(() => session, 'the upstream session');
  return { gw, upstream, upstreamSession, wsUrl, ...seeded };
}
