import t, { type Test } from 'tap';
import type { Gateway } from './helpers/data-plane-harness.ts';
import { startUpstreamAndDataPlane } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// A voice created through a Group of two credentials (two upstream accounts) is remembered with
// the credential that created it: its retrieval, update and deletion go there only, as for a
// stored response (docs/data-plane.md). The substitute upstream keeps voices per account.

/** A voice's sample as the upstream serves it: binary, passed on byte for byte. */
const SAMPLE_AUDIO = Buffer.from([0x52, 0x49, 0x46, 0x46, 0x00, 0xff, 0x0d, 0x0a, 0x57, 0x41, 0x56, 0x45]);

async function setup(t: Test) {
  const voices = new Map<string, string>();
  let created = 0;
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    const account = String(req.headers.authorization);
    if (req.method === 'POST') {
      const id = `voice_${++created}`;
      voices.set(id, account);
      return writeJson(res, 201, { id, name: 'mine' });
    }
    const parts = req.url.split('/');
    const sample = parts.at(-1) === 'sample';
    const id = sample ? parts.at(-2)! : parts.at(-1)!;
    if (id === 'voices') return writeJson(res, 200, { items: [...voices].filter(([, a]) => a === account).map(([v]) => v) });
    if (voices.get(id) !== account) return writeJson(res, 404, { detail: 'voice not found' });
    if (sample) {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(SAMPLE_AUDIO);
      return;
    }
    if (req.method === 'DELETE') voices.delete(id);
    return writeJson(res, 200, { id, name: 'mine' });
  });
  const { group, credentials } = await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'up-tts' }], secrets: ['sk-account-a-0123456789', 'sk-account-b-0123456789'] });
  const { keyValue } = await createKey(gw.store, { protocols: ['x-suite'] });
  const call = async (method: string, path: string, body?: FormData | string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${keyValue}` };
    if (typeof body === 'string') headers['content-type'] = 'application/json';
    const res = await fetch(`${gw.url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
    const bytes = Buffer.from(await res.arrayBuffer());
    const answer = (res.headers.get('content-type')?.includes('json') ? JSON.parse(bytes.toString('utf8')) : {}) as { id?: string; error?: { code: string; message: string } };
    return { status: res.status, answer, bytes, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')), headers: res.headers };
  };
  const create = async () => {
    const form = new FormData();
    form.append('name', 'mine');
    form.append('file', new Blob([Buffer.from('RIFF....WAVE')]), 'sample.wav');
    const r = await call('POST', '/x-suite/v1/audio/voices', form);
    if (r.status !== 201 || r.answer.id === undefined) throw new Error(`create answered ${r.status}`);
    return { id: r.answer.id, credentialId: r.record.credential_id };
  };
  return { gw: gw as Gateway, group, credentials, call, create, upstream };
}

t.test('retrieval, update and deletion of a created voice go to the credential that created it, every time', async (t) => {
  const { call, create } = await setup(t);
  const { id, credentialId } = await create();
  for (let i = 0; i < 3; i++) {
    const got = await call('GET', `/x-suite/v1/audio/voices/${id}`);
    t.equal(got.status, 200, `retrieval #${i}`);
    t.equal(got.record.credential_id, credentialId, `retrieval #${i}: the creating credential`);
    t.equal(got.record.attempt_count, 1, `retrieval #${i}: no other credential tried`);
  }
  const sample = await call('GET', `/x-suite/v1/audio/voices/${id}/sample`);
  t.equal(sample.status, 200, 'its sample');
  t.same(sample.bytes, SAMPLE_AUDIO, 'the sample audio as the upstream sent it');
  t.equal(sample.record.credential_id, credentialId, 'the sample: the creating credential');
  t.equal(sample.record.operation, 'voices-sample');
  const updated = await call('PATCH', `/x-suite/v1/audio/voices/${id}`, JSON.stringify({ name: 'renamed' }));
  t.equal(updated.status, 200, 'update');
  t.equal(updated.record.credential_id, credentialId);
  const deleted = await call('DELETE', `/x-suite/v1/audio/voices/${id}`);
  t.equal(deleted.status, 200, 'deletion');
  t.equal(deleted.record.credential_id, credentialId);
  const again = await call('DELETE', `/x-suite/v1/audio/voices/${id}`);
  t.equal(again.status, 404, 'a second deletion: the holder says it is gone');
  t.equal(again.record.credential_id, credentialId, 'and it is the holder that says so');
});

t.test('a voice whose credential is disabled is refused 503, naming the voice, without trying the other credential', async (t) => {
  const { gw, group, call, create, upstream } = await setup(t);
  const { id, credentialId } = await create();
  await gw.store.credentials.setState(group.id, Number(credentialId), { to: 'disabled', reason: 'test' });
  const before = upstream.requests.length;
  const got = await call('GET', `/x-suite/v1/audio/voices/${id}`);
  t.equal(got.status, 503);
  t.equal(got.answer.error?.code, 'no_available_credential');
  t.match(got.answer.error?.message, /holds this voice/);
  t.equal(upstream.requests.length, before, 'nothing reached the other account');
});

t.test('a voice id the gateway does not remember is routed as any request', async (t) => {
  const { call } = await setup(t);
  const first = await call('GET', '/x-suite/v1/audio/voices/voice_unknown');
  const second = await call('GET', '/x-suite/v1/audio/voices/voice_unknown');
  t.equal(first.status, 404);
  t.equal(second.status, 404);
  t.not(first.record.credential_id, second.record.credential_id, 'an id not remembered takes turns');
});
