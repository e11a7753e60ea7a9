import type { Test } from 'tap';
import type { ModelPrice } from '../../../src/usage/index.ts';
import { startUpstreamAndDataPlane } from './data-plane-harness.ts';
import { clientAuthHeaders, createKey, seedGroup, waitForLog } from './dataplane-scenarios.ts';

/** USD for `tokens` at `perMtok`, summed and rounded to 1e-10 USD as records keep it. */
export function usd(...parts: Array<[tokens: number, perMtok: number]>): number {
  return Math.round((parts.reduce((sum, [tokens, perMtok]) => sum + tokens * perMtok, 0) / 1e6) * 1e10) / 1e10;
}

/**
 * One request through a Group of `channel` whose model `team-m` is the upstream's `vendor-m`,
 * priced at `price`, the upstream answering `reply`; checks the answer is relayed unchanged and
 * returns the request's log record.
 */
export async function pricedRequest(t: Test, o: { channel: string; protocol: string; path: string; price: ModelPrice; reply: string; contentType?: string; body: string | FormData; headers?: Record<string, string> }) {
  const { gw, upstream } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': o.contentType ?? 'application/json' });
    res.end(o.reply);
  });
  await seedGroup(gw.store, { channel: o.channel, baseUrl: upstream.url, models: [{ external: 'team-m', upstream: 'vendor-m' }], secrets: ['sk-up-priced'] });
  const { keyValue } = await createKey(gw.store, { protocols: [o.protocol] });
  await gw.store.modelPrices.put('vendor-m', o.price, 'manual');
  const res = await fetch(`${gw.url}${o.path}`, { method: 'POST', headers: { ...clientAuthHeaders(o.protocol, keyValue), ...o.headers }, body: o.body });
  t.equal(await res.text(), o.reply, 'the answer is relayed unchanged');
  return waitForLog(gw, res.headers.get('x-switchyard-request-id'));
}
