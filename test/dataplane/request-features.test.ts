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

t.test('stream flag by the operation kind, and the other features read from the body', async (t) => {
  t.equal(requestFeatures('always', {}, NO_QUERY).stream, true);
  t.equal(requestFeatures('query_flag', {}, new URLSearchParams('stream=true')).stream, true);
  t.equal(requestFeatures('optional', { stream: 'true' }, NO_QUERY).stream, true);
  t.same(requestFeatures('never', { n: 2, response_format: 'b64_json', previous_response_id: 'resp_1' }, NO_QUERY), {
    stream: false,
    image_count: 2,
    output_format: 'base64',
    previous_response: true,
  });
});
