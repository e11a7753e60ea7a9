import t from 'tap';
import { jsonAttemptBody } from '../../src/dataplane/body/index.ts';
import { requestStreamUsage } from '../../src/usage/index.ts';

// Formatting JSON.stringify would not reproduce: spaces, 1.0, an escaped character, key order.
const RAW = Buffer.from('{ "model": "m1", "temperature": 1.0, "messages": [{"role":"user","content":"caf\\u00e9"}], "stream": true }');
const value = () => JSON.parse(RAW.toString()) as Record<string, unknown>;

t.test('unchanged model and no stream usage to add: the client bytes themselves', async (t) => {
  const out = jsonAttemptBody(RAW, value(), 'm1', undefined);
  t.equal(out.body, RAW, 'same buffer, not a copy');
  t.equal(out.addedStreamUsage, false);
  t.equal(jsonAttemptBody(RAW, value(), null, undefined).body, RAW, 'no model in the body to map');
});

t.test('stream usage the client did not ask for is spliced into the original bytes', async (t) => {
  const out = jsonAttemptBody(RAW, value(), 'm1', requestStreamUsage);
  t.equal(out.addedStreamUsage, true);
  const text = out.body.toString();
  t.ok(text.startsWith(RAW.toString().slice(0, RAW.toString().lastIndexOf('}'))), 'everything before the closing brace is as sent');
  t.match(text, /"temperature": 1\.0/);
  t.same(JSON.parse(text), { ...value(), stream_options: { include_usage: true } });
});

t.test('a client that asked for usage, or a non-streaming request, goes as sent', async (t) => {
  const asked = Buffer.from('{"model":"m1","stream":true,"stream_options":{"include_usage":true}}');
  const out = jsonAttemptBody(asked, JSON.parse(asked.toString()), 'm1', requestStreamUsage);
  t.equal(out.body, asked);
  t.equal(out.addedStreamUsage, false);
  const plain = Buffer.from('{"model":"m1"}');
  t.equal(jsonAttemptBody(plain, { model: 'm1' }, 'm1', requestStreamUsage).body, plain);
});

t.test('other stream_options are kept when include_usage is added', async (t) => {
  const raw = Buffer.from('{"model":"m1","stream":true,"stream_options":{"include_obfuscation":false}}');
  const out = jsonAttemptBody(raw, JSON.parse(raw.toString()), 'm1', requestStreamUsage);
  t.equal(out.addedStreamUsage, true);
  t.same(JSON.parse(out.body.toString()).stream_options, { include_obfuscation: false, include_usage: true });
});

t.test('a mapped model re-serializes with the upstream name and every other field', async (t) => {
  const out = jsonAttemptBody(RAW, value(), 'vendor-9', requestStreamUsage);
  t.same(JSON.parse(out.body.toString()), { ...value(), model: 'vendor-9', stream_options: { include_usage: true } });
  t.equal(out.addedStreamUsage, true);
});
