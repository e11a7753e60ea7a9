import t from 'tap';
import { startChatRoute } from './helpers/chat-route.ts';

// `n` is read for the notes' image_count rule. A client's `n` that is an array nested a few
// thousand deep (valid JSON, 10 KB) is no count: the request goes on as sent, not a 500.
t.test('an n that is a deeply nested array reaches the upstream as sent', async (t) => {
  const { upstream, post } = await startChatRoute(t, {
    channel: 'ch02',
    model: 'm',
    secret: 'sk-nested-n-0001',
    respond: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id":"c","choices":[]}');
    },
  });
  const body = `{"model":"m","n":${'['.repeat(5000)}${']'.repeat(5000)},"messages":[]}`;
  const { status, text } = await post(body);
  t.equal(status, 200, text);
  t.equal(upstream.requests.at(-1)?.body.toString(), body, 'the body as the client sent it');
});
