import t, { type Test } from 'tap';
import { startUpstreamAndDataPlane, type DataPlaneHarnessOptions } from './helpers/data-plane-harness.ts';
import { createKey, seedGroup, waitForLog } from './helpers/dataplane-scenarios.ts';
import { writeJson } from '../sdk/helpers/vendor-wire.ts';

// Speech naming a saved voice (`voice_id`, as Mistral's API names it) goes where the voice is
// held, as the voice's own calls do (docs/data-plane.md): the substitute upstream keeps voices
// per account, answers another account's saved voice 404, and speaks any preset voice.

async function setup(t: Test, options: DataPlaneHarnessOptions = {}) {
  const voices = new Map<string, string>();
  let created = 0;
  let spoken = 0;
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (req, res) => {
    const account = String(req.headers.authorization);
    if (req.url === '/v1/audio/voices' && req.method === 'POST') {
      const id = `voice_${++created}`;
      voices.set(id, account);
      return writeJson(res, 201, { id, name: 'mine' });
    }
    if (req.url === '/v1/audio/speech') {
      const voiceId = (JSON.parse(req.body.toString()) as { voice_id?: string }).voice_id;
      if (voiceId !== undefined && voices.has(voiceId) && voices.get(voiceId) !== account) return writeJson(res, 404, { message: `Voice ${voiceId} not found`, type: 'invalid_request_error' });
      // An id of its own on the answer, as some upstreams add: it names no voice.
      return writeJson(res, 200, { id: `speech_${++spoken}`, audio_data: 'UklGRg==' });
    }
    return writeJson(res, 404, { detail: 'not found' });
  }, options);
  const { group } = await seedGroup(gw.store, { channel: 'ch03', baseUrl: upstream.url, models: [{ external: 'tts', upstream: 'up-tts' }], secrets: ['sk-account-a-0123456789', 'sk-account-b-0123456789'] });
  const a = await createKey(gw.store, { name: 'a', protocols: ['x-suite'] });
  const b = await createKey(gw.store, { name: 'b', protocols: ['x-suite'] });
  const call = async (keyValue: string, method: string, path: string, body?: FormData | string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${keyValue}` };
    if (typeof body === 'string') headers['content-type'] = 'application/json';
    const res = await fetch(`${gw.url}${path}`, { method, headers, body });
    const answer = (await res.json()) as { id?: string; error?: { code: string; message: string } };
    return { status: res.status, answer, record: await waitForLog(gw, res.headers.get('x-switchyard-request-id')) };
  };
  const create = async () => {
    const form = new FormData();
    form.append('name', 'mine');
    form.append('file', new Blob([Buffer.from('RIFF....WAVE')]), 'sample.wav');
    const r = await call(a.keyValue, 'POST', '/x-suite/v1/audio/voices', form);
    if (r.status !== 201 || r.answer.id === undefined) throw new Error(`create answered ${r.status}`);
    return { id: r.answer.id, credentialId: r.record.credential_id };
  };
  const read = (keyValue: string, id: string) => call(keyValue, 'GET', `/x-suite/v1/audio/voices/${id}`);
  const speak = (keyValue: string, fields: Record<string, unknown>) => call(keyValue, 'POST', '/v1/audio/speech', JSON.stringify({ model: 'tts', input: 'hello', ...fields }));
  return { gw, group, upstream, a, b, call, create, speak, read };
}

t.test('speech naming a created voice in voice_id goes to the credential that created it, every time', async (t) => {
  const { a, create, speak } = await setup(t);
  const { id, credentialId } = await create();
  for (let i = 0; i < 4; i++) {
    const spoken = await speak(a.keyValue, { voice_id: id });
    t.equal(spoken.status, 200, `speech #${i}`);
    t.equal(spoken.record.credential_id, credentialId, `speech #${i}: the creating credential`);
    t.equal(spoken.record.attempt_count, 1, `speech #${i}: no other credential tried`);
  }
});

t.test("another AccessKey's speech naming the voice is not found, as its reads are; nothing is forwarded", async (t) => {
  const { upstream, a, b, create, speak } = await setup(t);
  const { id } = await create();
  const before = upstream.requests.length;
  const other = await speak(b.keyValue, { voice_id: id });
  t.equal(other.status, 404);
  t.equal(other.answer.error?.code, 'resource_not_found');
  t.match(other.record, { access_key_id: b.key.id, error_code: 'resource_not_found', attempt_count: 0 });
  t.equal(upstream.requests.length, before, 'nothing reached an upstream');
  t.equal((await speak(a.keyValue, { voice_id: id })).status, 200, "the owner's speech");
});

t.test('a voice id the gateway does not remember (a preset) and speech naming no voice are routed as any request', async (t) => {
  const { a, b, create, speak } = await setup(t);
  await create();
  for (const fields of [{ voice_id: 'gb_jane_neutral' }, {}]) {
    const first = await speak(b.keyValue, fields);
    const second = await speak(a.keyValue, fields);
    t.equal(first.status, 200);
    t.equal(second.status, 200);
    t.not(first.record.credential_id, second.record.credential_id, `${JSON.stringify(fields)}: takes turns between credentials`);
  }
});

t.test("speech naming a voice whose credential is disabled is refused 503, naming the voice, without trying the other credential", async (t) => {
  const { gw, group, upstream, a, create, speak } = await setup(t);
  const { id, credentialId } = await create();
  await gw.store.credentials.setState(group.id, Number(credentialId), { to: 'disabled', reason: 'test' });
  const before = upstream.requests.length;
  const spoken = await speak(a.keyValue, { voice_id: id });
  t.equal(spoken.status, 503);
  t.equal(spoken.answer.error?.code, 'no_available_credential');
  t.match(spoken.answer.error?.message, /holds this voice/);
  t.equal(upstream.requests.length, before, 'nothing reached the other account');
});

t.test("an id on a speech answer names no voice: calls naming it are not pinned to the credential that spoke", async (t) => {
  const { a, speak, read } = await setup(t);
  const spoken = await speak(a.keyValue, { voice_id: 'gb_jane_neutral' });
  t.equal(spoken.status, 200);
  t.equal(spoken.answer.id, 'speech_1');
  const first = await read(a.keyValue, 'speech_1');
  const second = await read(a.keyValue, 'speech_1');
  t.not(first.record.credential_id, second.record.credential_id, 'reads of that id take turns between credentials');
});

t.test("another AccessKey's speech naming the voice in a spooled body is not found either", async (t) => {
  // Past bufferedJsonBytes the body is scanned for the members routing reads, voice_id among them.
  const { upstream, b, create, speak } = await setup(t, { bufferedJsonBytes: 1024 });
  const { id } = await create();
  const before = upstream.requests.length;
  const other = await speak(b.keyValue, { input: 'hello '.repeat(400), voice_id: id });
  t.equal(other.status, 404);
  t.equal(other.answer.error?.code, 'resource_not_found');
  t.equal(upstream.requests.length, before, 'nothing reached an upstream');
});

t.test('a body naming voice_id twice is refused: the gateway reads the last, an upstream may read the first', async (t) => {
  const { upstream, b, create, call } = await setup(t);
  const { id } = await create();
  const before = upstream.requests.length;
  for (const body of [`{"model":"tts","input":"hello","voice_id":"${id}","voice_id":"gb_jane_neutral"}`, `{"model":"tts","input":"hello","voice_id":"${id}","voice\\u005fid":"gb_jane_neutral"}`]) {
    const other = await call(b.keyValue, 'POST', '/v1/audio/speech', body);
    t.equal(other.status, 400, body);
    t.equal(other.answer.error?.code, 'invalid_request_body');
  }
  t.equal(upstream.requests.length, before, 'nothing reached an upstream');
});
