import t from 'tap';
import { requestFeatures } from '../../src/dataplane/request-features.ts';

const NO_QUERY = new URLSearchParams();

t.test('input kind: the strongest of input, query and documents (other, then token ids, then text)', async (t) => {
  const kind = (body: Record<string, unknown>) => requestFeatures('never', body, NO_QUERY).input_kind;
  t.equal(kind({}), undefined, 'no input member, no kind');
  t.equal(kind({ input: 'hello' }), 'text');
  t.equal(kind({ input: [[1, 2], [3]] }), 'token_ids');
  t.equal(kind({ query: 'q', documents: ['a', { text: 'b' }] }), 'text', 'documents carrying only text are text');
  t.equal(kind({ query: 'q', documents: [{ text: 'b', image: 'x' }] }), 'other');
  t.equal(kind({ input: [1, 2], query: 'q' }), 'token_ids', 'token ids win over text');
  t.equal(kind({ input: 'a', query: [1], documents: [{}] }), 'other', 'other wins over both');
  t.equal(kind({ input: [1], documents: ['a'] }), 'token_ids', 'in either order');
});

t.test('a document object is text when it has a string text and beside it only strings under keys naming no media', async (t) => {
  const kind = (document: unknown) => requestFeatures('never', { query: 'q', documents: [document] }, NO_QUERY).input_kind;
  t.equal(kind({ text: 'a', title: 't' }), 'text', 'a title');
  t.equal(kind({ text: 'a', title: 't', id: 'doc-1', metadata: 'm' }), 'text', 'a title, an id, metadata');
  t.equal(kind({ title: 't' }), 'other', 'no text');
  t.equal(kind({ text: 1 }), 'other', 'a text that is no string');
  t.equal(kind({ text: 'a', score: 1 }), 'other', 'a value that is no string');
  t.equal(kind({ text: 'a', meta: { image: 'x' } }), 'other', 'an object beside the text');
  for (const key of ['image', 'image_url', 'image_base64', 'url', 'imageUrl', 'video', 'audio_data', 'file-uri', 'mime_type']) {
    t.equal(kind({ text: 'a', [key]: 'x' }), 'other', `${key} beside the text`);
  }
  t.equal(kind([{ text: 'a', title: 't' }]), 'other', 'an array is no document object');
});

t.test('stream flag by the operation kind, and the other features read from the body', async (t) => {
  t.equal(requestFeatures('always', {}, NO_QUERY).stream, true);
  t.equal(requestFeatures('query_flag', {}, new URLSearchParams('stream=true')).stream, true);
  t.equal(requestFeatures('optional', { stream: 'true' }, NO_QUERY).stream, true);
  t.same(requestFeatures('never', { n: 2, response_format: 'b64_json', previous_response_id: 'resp_1', background: true }, NO_QUERY), {
    stream: false,
    image_count: 2,
    output_format: 'base64',
    previous_response: true,
    background: true,
  });
  t.notOk('background' in requestFeatures('optional', { background: 'true' }, NO_QUERY), 'only the boolean asks for a background response');
});

t.test('n counts images when it is a number or a text field of digits; anything else is no count', async (t) => {
  const count = (n: unknown) => requestFeatures('never', { n }, NO_QUERY).image_count;
  t.equal(count(3), 3);
  t.equal(count('2'), 2, "a form's text field");
  t.equal(count({ a: 1 }), undefined);
  t.equal(count([2]), undefined);
  for (const notACount of [null, true, false, '', ' ', '2.5x']) t.equal(count(notACount), undefined, `${JSON.stringify(notACount)} is no count`);
  const deep = JSON.parse(`${'['.repeat(5000)}${']'.repeat(5000)}`) as unknown;
  t.equal(count(deep), undefined, 'nested deep enough to overflow a stringification');
});
