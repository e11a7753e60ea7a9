import t from 'tap';
import { applySplices, attemptSplices, JsonMemberScanner, jsonAttemptBody, bodyModelKey, bodyModelMapping } from '../../src/dataplane/body/index.ts';
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

t.test('a mapped model is spliced in: every other byte is as sent', async (t) => {
  const out = jsonAttemptBody(RAW, value(), 'vendor-9', requestStreamUsage);
  t.equal(out.body.toString(), RAW.toString().replace('"m1"', '"vendor-9"').replace(/}$/, ',"stream_options":{"include_usage":true}}'));
  t.equal(out.addedStreamUsage, true);
});

t.test('mapping keeps big integers, number spellings and duplicate keys byte for byte', async (t) => {
  const raw = Buffer.from('{"seed": 12345678901234567890, "model" :"ext", "t":1.50, "e":1E+2, "x":"a", "x":"b", "nested":{"model":"keep","model":"keep2"}, "s":"\\"model\\":\\"no\\""}');
  const out = jsonAttemptBody(raw, JSON.parse(raw.toString()), 'up/"q"', undefined);
  t.equal(out.body.toString(), raw.toString().replace('"ext"', '"up/\\"q\\""'));
  t.equal(out.addedStreamUsage, false);
});

t.test('every top-level model value is mapped, whichever one an upstream reads', async (t) => {
  const raw = Buffer.from('{"model":"cheap","x":1,"model":"ext"}');
  t.equal(jsonAttemptBody(raw, JSON.parse(raw.toString()), 'up', undefined).body.toString(), '{"model":"up","x":1,"model":"up"}');
});

t.test('stream_options is edited in place, as requestStreamUsage edits the object', async (t) => {
  const cases: Array<[string, string]> = [
    ['{"model":"a","stream":true,"stream_options":{}}', '{"model":"b","stream":true,"stream_options":{"include_usage":true}}'],
    ['{"model":"a","stream":true,"stream_options": { "x" : 1 } }', '{"model":"b","stream":true,"stream_options": { "x" : 1 ,"include_usage":true} }'],
    ['{"model":"a","stream":true,"stream_options":{"include_usage":false,"x":1}}', '{"model":"b","stream":true,"stream_options":{"include_usage":true,"x":1}}'],
    ['{"model":"a","stream":true,"stream_options":null}', '{"model":"b","stream":true,"stream_options":{"include_usage":true}}'],
    ['{"model":"a","stream":true,"stream_options":[1]}', '{"model":"b","stream":true,"stream_options":{"include_usage":true}}'],
    ['{"stream_options":"x","model":"a","stream":true,"stream_options":{"y":"}"}}', '{"stream_options":"x","model":"b","stream":true,"stream_options":{"y":"}","include_usage":true}}'],
  ];
  for (const [raw, expected] of cases) {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    const out = jsonAttemptBody(Buffer.from(raw), parsed, 'b', requestStreamUsage);
    t.equal(out.body.toString(), expected, raw);
    t.equal(out.addedStreamUsage, true);
    const viaObject = { ...parsed, model: 'b' };
    requestStreamUsage(viaObject);
    t.same(JSON.parse(out.body.toString()), viaObject, `${raw} parses as requestStreamUsage's object`);
  }
  const unmapped = Buffer.from('{"model":"b","stream":true,"stream_options":{"include_usage":null}}');
  t.equal(jsonAttemptBody(unmapped, JSON.parse(unmapped.toString()), 'b', requestStreamUsage).body.toString(), '{"model":"b","stream":true,"stream_options":{"include_usage":true}}');
});

t.test('a duplicate "model" is spliced even when the one routing read maps to itself', async (t) => {
  const raw = Buffer.from('{"model":"not-visible-to-the-key","messages":[],"model":"team-m"}');
  const value = JSON.parse(raw.toString()) as Record<string, unknown>;
  t.equal(jsonAttemptBody(raw, value, 'team-m', undefined).body.toString(), '{"model":"team-m","messages":[],"model":"team-m"}');
  const single = Buffer.from('{"model":"team-m","messages":[{"content":"the model"}]}');
  t.equal(jsonAttemptBody(single, JSON.parse(single.toString()), 'team-m', undefined).body, single, 'one "model": the client\'s own buffer');
});

t.test('listed requests naming the routed model are mapped, buffered or scanned alike; nothing else is', async (t) => {
  const raw = Buffer.from(
    '{"model":"e","requests":[{"model":"models/e","x":{"model":"e"}},"e",[{"model":"e"}],{"model" : "e","model":"models/e"},{"model":"models/f"},{"model":1}],' +
      '"requests":{"model":"e"},"other":[{"model":"e"}],"requests":[{"model":"e\\u0000"}, {"model":"models/e"}]}',
  );
  const expected = raw
    .toString()
    .replace('[{"model":"models/e","x"', '[{"model":"models/up","x"')
    .replace('{"model" : "e","model":"models/e"}', '{"model" : "up","model":"models/up"}')
    .replace('{"model":"models/e"}]}', '{"model":"models/up"}]}');
  const listed = bodyModelMapping('batch-embed-contents', 'e', 'up')!;
  t.equal(listed.key, 'requests[].model');
  t.equal(jsonAttemptBody(raw, JSON.parse(raw.toString()), null, undefined, listed).body.toString(), expected, 'buffered');
  const scanner = new JsonMemberScanner(new Map([[bodyModelKey('batch-embed-contents')!, 100]]));
  scanner.push(raw);
  t.equal(applySplices(raw, attemptSplices(scanner.end(), (m) => m.raw, undefined, false, listed)).toString(), expected, 'scanned');
  t.equal(bodyModelMapping('batch-embed-contents', 'e', 'e'), undefined, 'a model that maps to itself changes nothing');
  t.equal(bodyModelMapping('generate-content', 'e', 'up'), undefined, 'an operation whose body does not name the model');
});
