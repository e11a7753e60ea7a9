import t from 'tap';
import { SecretMaskingStream } from '../../src/dataplane/mask-upstream-secret.ts';

// The upstream credential never reaches a client (issue 4): an error body streamed through has
// every occurrence of the secret masked, however the upstream's writes cut it.

const SECRET = 'sk-live-0123456789abcdef';
// maskSecret's display form (src/store/mask.ts): first four and last four characters.
const MASKED = 'sk-l...cdef';

/** Everything a masking stream makes of `chunks`, and what it gave back for each chunk. */
function run(secret: string, chunks: string[]): { out: string; perChunk: string[] } {
  const masking = new SecretMaskingStream(secret);
  const perChunk = chunks.map((c) => masking.data(Buffer.from(c)).toString());
  const out = perChunk.join('') + (masking.end()?.toString() ?? '');
  return { out, perChunk };
}

t.test('a secret split at every position across two chunks is masked', async (t) => {
  const text = `{"error":"bad key ${SECRET} given"}`;
  const expected = `{"error":"bad key ${MASKED} given"}`;
  for (let cut = 0; cut <= text.length; cut++) {
    const { out } = run(SECRET, [text.slice(0, cut), text.slice(cut)]);
    t.equal(out, expected, `cut at ${cut}`);
  }
});

t.test('a secret spread over one-byte chunks is masked', async (t) => {
  const text = `a${SECRET}b`;
  t.equal(run(SECRET, [...text]).out, `a${MASKED}b`);
});

t.test('repeated occurrences, adjacent ones and one across chunks, are all masked', async (t) => {
  const { out } = run(SECRET, [`x ${SECRET}${SECRET} y ${SECRET.slice(0, 7)}`, `${SECRET.slice(7)} z ${SECRET}`]);
  t.equal(out, `x ${MASKED}${MASKED} y ${MASKED} z ${MASKED}`);
});

t.test('a tail that begins the secret but turns out not to be it comes out as sent', async (t) => {
  const almost = SECRET.slice(0, 10);
  const { out, perChunk } = run(SECRET, [`start ${almost}`, 'X rest']);
  t.equal(out, `start ${almost}X rest`, 'every byte, unchanged');
  t.equal(perChunk[0], 'start ', 'only what may begin the secret was held back');
  t.equal(run(SECRET, [`end ${almost}`]).out, `end ${almost}`, 'a held tail comes out at the end');
});

t.test('the longest tail that begins the secret is held, not a shorter one', async (t) => {
  // "aab" repeats the secret's first byte: after "aa" both "aa" and "a" may begin it.
  const { out, perChunk } = run('aab-secret-value', ['x aa', 'b-secret-value y']);
  t.equal(perChunk[0], 'x ');
  t.equal(out, 'x aab-...alue y');
});

t.test('an event whose end is not a beginning of the secret is not held back', async (t) => {
  const event = `event: error\ndata: {"error":{"message":"key ${SECRET}"}}\n\n`;
  const { perChunk } = run(SECRET, [event]);
  t.equal(perChunk[0], `event: error\ndata: {"error":{"message":"key ${MASKED}"}}\n\n`, 'the whole event, masked, at once');
});

t.test('a body without the secret passes through unchanged', async (t) => {
  const masking = new SecretMaskingStream(SECRET);
  const chunk = Buffer.from('{"error":"nothing to hide"}\n');
  t.ok(masking.data(chunk).equals(chunk));
  t.equal(masking.end(), undefined, 'nothing held');
});

// A secret with `/`, `+` and `=` may be echoed percent-encoded (a URL's query) or JSON-escaped
// with `/` as `\/`: each form is masked, to the same display form, however a chunk cuts it.
const ESCAPED_SECRET = 'sk-up/stream+key=abcdef123456';
const ESCAPED_MASKED = 'sk-u...3456';
for (const [name, echoed] of [
  ['percent-encoded', encodeURIComponent(ESCAPED_SECRET)],
  ['with / escaped as \\/', ESCAPED_SECRET.replaceAll('/', '\\/')],
  ['as it is', ESCAPED_SECRET],
] as const) {
  t.test(`a secret echoed ${name} is masked, split at every position across two chunks`, async (t) => {
    const text = `{"error":"see ?key=${echoed}&x=1"}`;
    const expected = `{"error":"see ?key=${ESCAPED_MASKED}&x=1"}`;
    for (let cut = 0; cut <= text.length; cut++) {
      const { out } = run(ESCAPED_SECRET, [text.slice(0, cut), text.slice(cut)]);
      t.equal(out, expected, `cut at ${cut}`);
    }
  });
}

t.test('the three forms in one body, one-byte chunks, are each masked', async (t) => {
  const forms = [ESCAPED_SECRET, encodeURIComponent(ESCAPED_SECRET), ESCAPED_SECRET.replaceAll('/', '\\/')];
  const text = forms.map((f) => `<${f}>`).join(' ');
  t.equal(run(ESCAPED_SECRET, [...text]).out, forms.map(() => `<${ESCAPED_MASKED}>`).join(' '));
});
