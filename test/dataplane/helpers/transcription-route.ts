import type { ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { startUpstream, type Gateway, type RecordedUpstreamRequest } from './data-plane-harness.ts';
import { createKey, seedGroup } from './dataplane-scenarios.ts';
import { gateway } from './gateway-per-test.ts';

const answerText = (_req: RecordedUpstreamRequest, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"text":"ok"}');
};

/**
 * A ch03 transcription upstream (answering `{"text":"ok"}` unless `respond` says otherwise), the
 * data plane in front of it with `whisper-1` mapped as is, and an x-suite key; all stopped at
 * the test's end. `post` sends a form with the given boundary, as the SDKs send a file upload.
 */
export async function transcriptionRoute(t: Test, boundary: string, respond = answerText) {
  const upstream = await startUpstream(respond);
  t.teardown(() => upstream.close());
  const gw: Gateway = await gateway(t);
  await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'whisper-1', upstream: 'whisper-1' }], secrets: ['sk-a'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
  const post = (form: Buffer) => fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${keyValue}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form });
  return { upstream, gw, keyValue, post };
}
