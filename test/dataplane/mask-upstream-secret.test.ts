import t from 'tap';
import { maskedForClients, maskSecretInHeaders, maskSecretInText, SecretMaskingStream } from '../../src/dataplane/mask-upstream-secret.ts';
import { echoedForms } from '../../src/dataplane/secret-echo-forms.ts';
import type { OutgoingHeaders } from '../../src/upstream/index.ts';
import { seeded } from '../helpers/seeded-random.ts';

// The upstream credential never reaches a client (issue 4): an error body streamed through has
// every occurrence of the secret masked, however the upstream's writes cut it.

const SECRET = 'sk-live-0123456789abcdef';
// What a data-plane client sees (maskedForClients): `***`, then a secret's last four characters when it has 24 or more.
const MASKED = '***cdef';

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
  t.equal(out, 'x *** y');
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
const ESCAPED_MASKED = '***3456';
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

// What real encoders make of a secret with `/`, `+` and `=`, written out by hand: Python's
// urllib.parse.quote (`/` left: its default safe='/'), percent-encoding in lower-case hex,
// .NET's System.Text.Json (`+` as \u002B, `/` and `=` left), PHP (`/` as `\/`), Gson (`=` as
// \u003d) and base64.
const ECHO_SECRET = 'sk-up/SECRET+val=0123456789abcdefXYZ';
const ECHO_MASKED = '***fXYZ';
const ECHOES: [name: string, echoed: string][] = [
  ['quoted as Python does', 'sk-up/SECRET%2Bval%3D0123456789abcdefXYZ'],
  ['quoted as Python does, lower-case hex', 'sk-up/SECRET%2bval%3d0123456789abcdefXYZ'],
  ['percent-encoded, lower-case hex', 'sk-up%2fSECRET%2bval%3d0123456789abcdefXYZ'],
  ['by .NET System.Text.Json', 'sk-up/SECRET\\u002Bval=0123456789abcdefXYZ'],
  ['by PHP json_encode', 'sk-up\\/SECRET+val=0123456789abcdefXYZ'],
  ['by Gson', 'sk-up/SECRET+val\\u003d0123456789abcdefXYZ'],
  ['in base64', 'c2stdXAvU0VDUkVUK3ZhbD0wMTIzNDU2Nzg5YWJjZGVmWFla'],
];
for (const [name, echoed] of ECHOES) {
  t.test(`a secret echoed ${name} is masked in text, in a header and split at every position`, async (t) => {
    const text = `{"error":{"message":"bad key ${echoed}","url":"?key=${echoed}&x=1"}}`;
    const expected = `{"error":{"message":"bad key ${ECHO_MASKED}","url":"?key=${ECHO_MASKED}&x=1"}}`;
    t.equal(maskSecretInText(text, ECHO_SECRET), expected, 'text');
    for (let cut = 0; cut <= text.length; cut++) {
      t.equal(run(ECHO_SECRET, [text.slice(0, cut), text.slice(cut)]).out, expected, `cut at ${cut}`);
    }
    t.equal(run(ECHO_SECRET, [...text]).out, expected, 'one-byte chunks');
    const headers: OutgoingHeaders = { 'x-echo': `key=${echoed}`, 'x-list': [echoed, 'b=1'] };
    maskSecretInHeaders(headers, ECHO_SECRET);
    t.same(headers, { 'x-echo': `key=${ECHO_MASKED}`, 'x-list': [ECHO_MASKED, 'b=1'] }, 'headers');
  });
}

t.test('a secret inside longer base64 (Basic auth `user:key`) is masked at each alignment, standard and url-safe', async (t) => {
  const secret = 'sk-up/SECRET+val=0123456789abcdefXYZ~~~?>';
  for (const prefix of ['', 'u:', 'user:', 'x']) {
    for (const alphabet of ['base64', 'base64url'] as const) {
      const encoded = Buffer.from(`${prefix}${secret}`).toString(alphabet);
      const masked = maskSecretInText(encoded, secret);
      // Before the mask, at most the prefix's own characters and the one it shares with the secret; after it, one and the padding.
      const before = Math.ceil((prefix.length * 4) / 3);
      t.match(masked, new RegExp(`^[A-Za-z0-9+/_-]{0,${before}}\\*\\*\\*~~\\?>[A-Za-z0-9+/_-]?=*$`), `${alphabet} after ${JSON.stringify(prefix)}: ${masked}`);
      t.equal(run(secret, [encoded.slice(0, 17), encoded.slice(17)]).out, masked, 'the same in a stream');
    }
  }
});

t.test('a key with `"` and `\\` echoed by a JSON encoder is masked, in text, a stream and a header', async (t) => {
  const secret = 'sk-quote"back\\slash/0123456789abcdef';
  const body = JSON.stringify({ error: { message: `Invalid key ${secret}` } });
  t.equal(maskSecretInText(body, secret), '{"error":{"message":"Invalid key ***cdef"}}', 'JSON.stringify');
  for (let cut = 0; cut <= body.length; cut++) t.equal(run(secret, [body.slice(0, cut), body.slice(cut)]).out, '{"error":{"message":"Invalid key ***cdef"}}', `cut at ${cut}`);
  const php = JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/');
  t.equal(maskSecretInText(`"${php}"`, secret), '"***cdef"', 'PHP: `/` as `\\/` too');
  const headers: OutgoingHeaders = { 'x-echo-json': JSON.stringify(secret) };
  maskSecretInHeaders(headers, secret);
  t.equal(headers['x-echo-json'], '"***cdef"', 'header');
});

t.test('Go, .NET, Python ensure_ascii, PHP and form-urlencoding each as its encoder writes it', async (t) => {
  const secret = 'sk-amp&<gt>+=é😀 ~*/0123456789abcdef';
  const echoes: [name: string, echoed: string][] = [
    ['Go encoding/json', 'sk-amp\\u0026\\u003cgt\\u003e+=é😀 ~*/0123456789abcdef'],
    ['.NET System.Text.Json', 'sk-amp\\u0026\\u003Cgt\\u003E\\u002B=\\u00E9\\uD83D\\uDE00 ~*/0123456789abcdef'],
    ['Python json.dumps', 'sk-amp&<gt>+=\\u00e9\\ud83d\\ude00 ~*/0123456789abcdef'],
    ['URLSearchParams', 'sk-amp%26%3Cgt%3E%2B%3D%C3%A9%F0%9F%98%80+%7E*%2F0123456789abcdef'],
    ['Python quote_plus', 'sk-amp%26%3Cgt%3E%2B%3D%C3%A9%F0%9F%98%80+~%2A%2F0123456789abcdef'],
    ['PHP json_encode', 'sk-amp&<gt>+=\\u00e9\\ud83d\\ude00 ~*\\/0123456789abcdef'],
    ['HTML', 'sk-amp&amp;&lt;gt&gt;+=é😀 ~*/0123456789abcdef'],
  ];
  for (const [name, echoed] of echoes) t.equal(maskSecretInText(`key ${echoed}.`, secret), 'key ***cdef.', name);
  t.equal(new URLSearchParams({ k: secret }).toString(), `k=${echoes[3]![1]}`, 'the URLSearchParams form is the real one');
  t.notOk(echoedForms(secret).includes('sk-amp&<gt>\\u002B=\u00e9\ud83d\ude00 ~*/0123456789abcdef'), 'no form mixes encoders (`+` alone escaped)');
});

t.test('a form inside a longer one is masked as the longer one, in a stream cut anywhere and at its end', async (t) => {
  // JSON-escaped, a key that begins with `"` and ends with `\` holds the key as it is from its
  // second character to its last but one: the whole text's masking takes the escaped form.
  const secret = '"quote0123456789\\';
  const escaped = JSON.stringify(secret).slice(1, -1);
  t.equal(escaped.indexOf(secret), 1);
  const text = `{"error":"${escaped}"}`;
  t.equal(maskSecretInText(text, secret), '{"error":"***"}', 'text');
  for (let cut = 0; cut <= text.length; cut++) t.equal(run(secret, [text.slice(0, cut), text.slice(cut)]).out, '{"error":"***"}', `cut at ${cut}`);
  t.equal(run(secret, [`x ${escaped.slice(0, -1)}`]).out, `x \\***`, 'a longer form cut off by the end: the one it holds masked');
});

t.test('random long secrets and chunkings: the stream masks what the whole-text masking does', async (t) => {
  const random = seeded(20261127);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const alphabet = [...'aZ9%/\\-_ .=&"+<>\'~*é'];
  let mismatches = 0;
  const CASES = 1500;
  for (let n = 0; n < CASES; n++) {
    const secret = Array.from({ length: 8 + Math.floor(random() * 12) }, () => pick(alphabet)).join('');
    const forms = echoedForms(secret);
    const noise = () => Array.from({ length: Math.floor(random() * 4) }, () => pick(alphabet)).join('');
    // Forms, pieces of forms (which may begin one and end in another) and noise.
    const pieces = Array.from({ length: 1 + Math.floor(random() * 6) }, () => {
      const form = pick(forms);
      const r = random();
      return r < 0.4 ? form : r < 0.7 ? form.slice(0, Math.floor(random() * form.length)) : noise();
    });
    const text = pieces.join('');
    const escaped = forms.map((f) => f.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'));
    const expected = text.replace(new RegExp(escaped.join('|'), 'g'), () => maskedForClients(secret));
    const cuts = Array.from({ length: Math.floor(random() * 6) }, () => Math.floor(random() * (text.length + 1))).sort((x, y) => x - y);
    const bytes = Buffer.from(text);
    const byteCuts = cuts.map((c) => Buffer.byteLength(text.slice(0, c)));
    const masking = new SecretMaskingStream(secret);
    const parts = [0, ...byteCuts].map((at, i) => masking.data(bytes.subarray(at, [...byteCuts, bytes.length][i])));
    const out = Buffer.concat([...parts, masking.end() ?? Buffer.alloc(0)]).toString();
    if (out !== expected || maskSecretInText(text, secret) !== expected) {
      mismatches++;
      if (mismatches <= 5) t.fail(`secret ${JSON.stringify(secret)} text ${JSON.stringify(text)} cuts ${JSON.stringify(cuts)}`, { found: out, text: maskSecretInText(text, secret), wanted: expected });
    }
  }
  t.equal(mismatches, 0, `all ${CASES} cases agree`);
});

t.test("Python's quote also encodes !'()*, which encodeURIComponent leaves", async (t) => {
  const secret = "sk-a!b'c(d)e*f/g0123456789";
  const quoted = 'sk-a%21b%27c%28d%29e%2Af/g0123456789';
  const lower = 'sk-a%21b%27c%28d%29e%2af/g0123456789';
  t.equal(maskSecretInText(`key ${quoted} and ${lower}`, secret), 'key ***6789 and ***6789', 'upper- and lower-case hex');
  t.equal(run(secret, [`key ${quoted.slice(0, 9)}`, `${quoted.slice(9)}.`]).out, 'key ***6789.');
  t.equal(maskSecretInText(`key ${encodeURIComponent(secret)}`, secret), 'key ***6789', 'encodeURIComponent still');
});

t.test('a key of letters, digits and ._~-: URLSearchParams encodes `~`, near-forms no encoder makes pass as sent', async (t) => {
  const key = 'sk-proj_abc.DEF~0123456789';
  const query = new URLSearchParams({ k: key }).toString();
  t.equal(query, 'k=sk-proj_abc.DEF%7E0123456789');
  t.equal(maskSecretInText(query, key), 'k=***6789', 'text');
  t.equal(run(key, [query.slice(0, 20), query.slice(20)]).out, 'k=***6789', 'stream');
  const near = ['sk\\u002dproj_abc.DEF~0123456789', 'sk%2Dproj_abc.DEF~0123456789', 'sk-proj%5Fabc.DEF~0123456789', 'sk-proj_abc%2EDEF~0123456789'];
  for (const text of near) {
    t.equal(maskSecretInText(text, key), text, `text ${text}`);
    t.equal(run(key, [text]).out, text, `stream ${text}`);
  }
  t.equal(maskSecretInText(`a ${key} b`, key), 'a ***6789 b', 'the key itself masked');
  t.same(run(key, ['x \\u', '002d %2']).perChunk, ['x \\u', '002d %2'], 'no tail held that only an escape would begin');
});

t.test("a key holding any one printable ASCII character: each of JavaScript's own encodings of it is masked", async (t) => {
  // Keys of letters, digits, `_`, `.` and `-` alone skip the text encoders (their forms are the
  // key itself); one character more must bring the encoders back.
  const encodings: [name: string, encode: (key: string) => string][] = [
    ['encodeURIComponent', encodeURIComponent],
    ['URLSearchParams', (key) => new URLSearchParams({ k: key }).toString().slice(2)],
    ['JSON.stringify', (key) => JSON.stringify(key).slice(1, -1)],
    ['Basic auth base64', (key) => Buffer.from(`user:${key}`).toString('base64')],
  ];
  for (let code = 0x20; code < 0x7f; code++) {
    const key = `sk-${String.fromCharCode(code)}-0123456789abcdefWXYZ`;
    for (const [name, encode] of encodings) {
      const masked = maskSecretInText(`got ${encode(key)} here`, key);
      t.notOk(masked.includes(encode(key)), `${JSON.stringify(key)}, ${name}`);
    }
  }
});

// A secret shorter than 8 characters (a local upstream's placeholder key: `x`, `none`,
// `ollama`) is masked only as a whole token: not preceded or followed by an ASCII letter,
// digit, `_` or `-`, so `a` in `application/json` and `test` in `latest` stay. A secret under
// 24 characters is shown as `***` (maskedForClients), its length untold.
const SHORT = 'none';
const SHORT_MASKED = '***';
const SHORT_CASES: [name: string, text: string, expected: string][] = [
  ['the whole text', 'none', '***'],
  ['at the start', 'none is invalid', '*** is invalid'],
  ['at the end', 'key is none', 'key is ***'],
  ['a JSON error', '{"error":"key none is invalid"}', '{"error":"key *** is invalid"}'],
  ['in quotes, twice', '"none","none"', '"***","***"'],
  ['between punctuation', '(none)/none.none=none&', '(***)/***.***=***&'],
  ['next to a non-ASCII letter', 'énoneé', 'é***é'],
  ['after a lower-case letter', 'xnone', 'xnone'],
  ['before a lower-case letter', 'nonex', 'nonex'],
  ['after an upper-case letter', 'Xnone', 'Xnone'],
  ['before an upper-case letter', 'noneX', 'noneX'],
  ['after a digit', '1none', '1none'],
  ['before a digit', 'none1', 'none1'],
  ['after _', '_none', '_none'],
  ['before _', 'none_', 'none_'],
  ['after -', '-none', '-none'],
  ['before -', 'none-', 'none-'],
  ['twice in a row', 'nonenone', 'nonenone'],
  ['inside a word, and alone', 'nonesuch none', 'nonesuch ***'],
];

for (const [name, text, expected] of SHORT_CASES) {
  t.test(`a short secret ${name}: masked only as a whole token, in text and split at every position of a stream`, async (t) => {
    t.equal(maskSecretInText(text, SHORT), expected, 'text');
    for (let cut = 0; cut <= text.length; cut++) {
      t.equal(run(SHORT, [text.slice(0, cut), text.slice(cut)]).out, expected, `cut at ${cut}`);
    }
    t.equal(run(SHORT, [...text]).out, expected, 'one-byte chunks');
  });
}

t.test('a short secret in ordinary words of an answer is not masked', async (t) => {
  t.equal(maskSecretInText('application/json', 'a'), 'application/json');
  t.equal(maskSecretInText('model: latest', 'test'), 'model: latest');
  t.equal(run('a', ['{"object":"list","data":[]}']).out, '{"object":"list","data":[]}');
  t.equal(maskSecretInText('{"error":"model ollama not found"}', 'ollama'), '{"error":"model *** not found"}', 'a whole word is masked');
});

t.test('a short secret ending a chunk waits for the next byte, and the end counts as a boundary', async (t) => {
  const followed = run(SHORT, ['key none', 'x', ' none', '']);
  t.same(followed.perChunk, ['key ', 'nonex', ' ', ''], 'held until its right neighbour came');
  t.equal(followed.out, 'key nonex ***', 'the last one masked at the end');
  const masked = run(SHORT, ['key none', ' ok']);
  t.same(masked.perChunk, ['key ', '*** ok']);
});

t.test('a short secret after a token byte is not held back', async (t) => {
  t.same(run(SHORT, ['xnone', ' y']).perChunk, ['xnone', ' y'], 'cannot be a whole token: goes out at once');
});

// `/` and `+` are what encodeURIComponent and JSON's `\/` change: each form of a short secret
// is a whole token on its own, with its own neighbours.
const SHORT_ESCAPED = 'a/b+';
for (const [name, echoed] of [
  ['as it is', SHORT_ESCAPED],
  ['percent-encoded', encodeURIComponent(SHORT_ESCAPED)],
  ['with / escaped as \\/', SHORT_ESCAPED.replaceAll('/', '\\/')],
  ['quoted as Python does, / left', 'a/b%2B'],
  ['percent-encoded in lower-case hex', 'a%2fb%2b'],
  ['quoted with / left, in lower-case hex', 'a/b%2b'],
  ['with + alone as \\u002B (.NET)', 'a/b\\u002B'],
] as const) {
  t.test(`a short secret echoed ${name} is masked only as a whole token, split at every position`, async (t) => {
    const cases: [text: string, expected: string][] = [
      [`?key=${echoed}&x=1`, '?key=***&x=1'],
      [`"${echoed}"`, '"***"'],
      [`x${echoed}`, `x${echoed}`],
      [`${echoed}0`, `${echoed}0`],
    ];
    for (const [text, expected] of cases) {
      t.equal(maskSecretInText(text, SHORT_ESCAPED), expected, `text ${text}`);
      for (let cut = 0; cut <= text.length; cut++) {
        t.equal(run(SHORT_ESCAPED, [text.slice(0, cut), text.slice(cut)]).out, expected, `${text} cut at ${cut}`);
      }
    }
  });
}

t.test('headers: a short secret is masked only where it is a whole token', async (t) => {
  const headers: OutgoingHeaders = { 'content-type': 'application/json', 'x-echo': 'key=a', 'x-list': ['a', 'data'] };
  maskSecretInHeaders(headers, 'a');
  t.same(headers, { 'content-type': 'application/json', 'x-echo': 'key=***', 'x-list': ['***', 'data'] });
});

t.test('8 characters is the length from which a secret is masked anywhere', async (t) => {
  t.equal(maskSecretInText('x12345678x', '12345678'), 'x***x', '8: masked inside a word');
  t.equal(run('12345678', ['x1234', '5678x']).out, 'x***x', '8: in a stream too');
  const headers: OutgoingHeaders = { 'x-echo': 'x12345678x' };
  maskSecretInHeaders(headers, '12345678');
  t.equal(headers['x-echo'], 'x***x', '8: in a header too');
  t.equal(maskSecretInText('x1234567x', '1234567'), 'x1234567x', '7: only as a whole token');
  t.equal(run('1234567', ['x1234', '567x']).out, 'x1234567x', '7: in a stream too');
});

// A secret with `%`: its percent-encoded form (`%` as `%25`) begins with its form as it is, so
// where the form as it is fails the whole-token check the percent-encoded one is still tried.
const PERCENT_CASES: [secret: string, text: string, expected: string][] = [
  ['%', ' %25', ' ***'],
  ['%', '?key=%25&x=1', '?key=***&x=1'],
  ['%', '"%25"', '"***"'],
  ['%', ' % ', ' *** '],
  ['%', '%2', '%2'],
  ['%', '%25x', '%25x'],
  ['%', 'x%25', 'x%25'],
  ['a%', 'key=a%25', 'key=***'],
  ['a%', 'key=a%25 a% a%2', 'key=*** *** a%2'],
  ['%25', '(%2525)', '(***)'],
  ['%25', '(%25)', '(***)'],
  ['%25', '(%252)', '(%252)'],
  ['%/', '[%25%2F]', '[***]'],
  ['%/', '[%\\/]', '[***]'],
];

for (const [secret, text, expected] of PERCENT_CASES) {
  t.test(`a short secret ${JSON.stringify(secret)} in ${JSON.stringify(text)}: its longer form is tried where the first fails, split at every position`, async (t) => {
    t.equal(maskSecretInText(text, secret), expected, 'text');
    for (let cut = 0; cut <= text.length; cut++) {
      t.equal(run(secret, [text.slice(0, cut), text.slice(cut)]).out, expected, `cut at ${cut}`);
    }
    for (let a = 0; a <= text.length; a++) {
      for (let b = a; b <= text.length; b++) t.equal(run(secret, [text.slice(0, a), text.slice(a, b), text.slice(b)]).out, expected, `cut at ${a} and ${b}`);
    }
    t.equal(run(secret, [...text]).out, expected, 'one-byte chunks');
  });
}


t.test('random short secrets and chunkings: the stream masks what a whole-text whole-token regex does', async (t) => {
  const random = seeded(20261126);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  // Token bytes and the characters the escapes change or produce, so forms meet, overlap and touch.
  const alphabet = [...'ab25F%/\\-_ .=&"+u0f<>\'~#;'];
  let mismatches = 0;
  const CASES = 4000;
  for (let n = 0; n < CASES; n++) {
    const secret = Array.from({ length: 1 + Math.floor(random() * 7) }, () => pick(alphabet)).join('');
    const forms = echoedForms(secret);
    const pieces = Array.from({ length: 1 + Math.floor(random() * 8) }, () => (random() < 0.5 ? pick(forms) : Array.from({ length: Math.floor(random() * 4) }, () => pick(alphabet)).join('')));
    const text = pieces.join('');
    // The reference: a form, tried in order at each place, neither preceded nor followed by an
    // ASCII letter, digit, `_` or `-`, over the whole text; masked as one `*` a character.
    const escaped = forms.map((f) => f.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'));
    const reference = new RegExp(`(?<![A-Za-z0-9_-])(?:${escaped.join('|')})(?![A-Za-z0-9_-])`, 'g');
    const expected = text.replace(reference, '***');
    const cuts = Array.from({ length: Math.floor(random() * 5) }, () => Math.floor(random() * (text.length + 1))).sort((x, y) => x - y);
    const chunks = [0, ...cuts].map((at, i) => text.slice(at, [...cuts, text.length][i]));
    const out = run(secret, chunks).out;
    if (out !== expected || maskSecretInText(text, secret) !== expected) {
      mismatches++;
      if (mismatches <= 5) t.fail(`secret ${JSON.stringify(secret)} chunks ${JSON.stringify(chunks)}`, { found: out, wanted: expected });
    }
  }
  t.equal(mismatches, 0, `all ${CASES} cases agree`);
});

t.test("credentials taking turns, and one again after 70 others: each answer's headers are masked in its own secret's forms", async (t) => {
  // A Group's credentials alternate answer by answer; two long secrets of one length and a short one.
  const credentials = [
    { secret: 'sk-one/A+b=0123456789abcdefQRST', encoded: 'sk-one%2FA%2Bb%3D0123456789abcdefQRST', masked: '***QRST' },
    { secret: 'sk-two/C+d=0123456789abcdefUVWX', encoded: 'sk-two%2FC%2Bd%3D0123456789abcdefUVWX', masked: '***UVWX' },
    { secret: 'k/1', encoded: 'k%2F1', masked: '***' },
  ];
  const answer = (secret: string) => {
    const headers: OutgoingHeaders = Object.fromEntries(credentials.map((c, i) => [`x-echo-${i}`, `key=${c.encoded}`]));
    maskSecretInHeaders(headers, secret);
    return headers;
  };
  const expected = (turn: number) => Object.fromEntries(credentials.map((c, i) => [`x-echo-${i}`, `key=${i === turn ? credentials[turn]!.masked : c.encoded}`]));
  for (let round = 0; round < 3; round++) {
    credentials.forEach((c, turn) => t.same(answer(c.secret), expected(turn), `round ${round}, credential ${turn}`));
  }
  for (let n = 0; n < 70; n++) t.equal(maskSecretInText(`key=sk-other-${n}/0123456789`, `sk-other-${n}/0123456789`), 'key=***');
  t.same(answer(credentials[0]!.secret), expected(0), 'the first credential after 70 others');
});
