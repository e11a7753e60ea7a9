import t, { type Test } from 'tap';
import OpenAI, { toFile } from 'openai';
import { seedRoute, startUpstreamAndDataPlane } from '../dataplane/helpers/data-plane-harness.ts';
import { waitForLog } from '../dataplane/helpers/dataplane-scenarios.ts';

// docs/data-plane.md step 9: an image stream ends with its completed event (the final image and
// the usage); one the upstream ends cleanly before it was cut short, as a responses stream
// without response.completed is, and the client's SDK is told so rather than left without its image.

const USAGE = { input_tokens: 50, input_tokens_details: { text_tokens: 40, image_tokens: 10 }, output_tokens: 4160, total_tokens: 4210 };
const sse = (event: Record<string, unknown>) => `event: ${event['type'] as string}\ndata: ${JSON.stringify(event)}\n\n`;

async function imageStream(t: Test, body: string, edit = false) {
  const { upstream, gw } = await startUpstreamAndDataPlane(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(body);
  });
  const { keyValue } = await seedRoute(gw.store, { channel: 'ch09', baseUrl: upstream.url, models: [{ external: 'img', upstream: 'gpt-image-1' }], protocols: ['x-images'] });
  const client = new OpenAI({ apiKey: keyValue, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const { data: stream, response } = await (edit
    ? client.images.edit({ image: await toFile(Buffer.alloc(2000, 7), 'in.png', { type: 'image/png' }), model: 'img', prompt: 'p', stream: true, partial_images: 1 })
    : client.images.generate({ model: 'img', prompt: 'a lighthouse', stream: true, partial_images: 1 })
  ).withResponse();
  const types: string[] = [];
  const error = await (async () => {
    for await (const event of stream) types.push(event.type);
  })().catch((err: unknown) => err);
  const record = await waitForLog(gw, response.headers.get('x-switchyard-request-id'));
  return { types, error, record };
}

for (const [kind, edit] of [['image_generation', false], ['image_edit', true]] as const) {
  t.test(`${kind}: a stream that ends cleanly after a partial image, before its completed event, was cut short`, async (t) => {
    const { types, error, record } = await imageStream(t, sse({ type: `${kind}.partial_image`, b64_json: 'QUJD', partial_image_index: 0 }), edit);
    t.same(types, [`${kind}.partial_image`]);
    t.ok(error instanceof OpenAI.APIError, 'the SDK raises the error event that follows');
    t.equal((error as InstanceType<typeof OpenAI.APIError>).code, 'upstream_stream_broken');
    t.match(record, { status: 200, error_code: 'upstream_stream_broken' });
  });

  t.test(`${kind}: a stream that ends with its completed event is whole, a [DONE] after it or not`, async (t) => {
    for (const done of ['', 'data: [DONE]\n\n']) {
      const body = sse({ type: `${kind}.partial_image`, b64_json: 'QUJD', partial_image_index: 0 }) + sse({ type: `${kind}.completed`, b64_json: 'QUJD', usage: USAGE }) + done;
      const { types, error, record } = await imageStream(t, body, edit);
      t.same(types, [`${kind}.partial_image`, `${kind}.completed`]);
      t.equal(error, undefined);
      t.match(record, { status: 200, error_code: null, usage: { input_tokens: 50, output_tokens: 4160 } });
    }
  });
}

t.test("an image stream that ends with the upstream's own error event keeps it, with no error event of the gateway's after it", async (t) => {
  const failed = `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'image_generation_user_error', code: 'moderation_blocked', message: 'Your request was rejected by the safety system.', param: null } })}\n\n`;
  const { types, error, record } = await imageStream(t, sse({ type: 'image_generation.partial_image', b64_json: 'QUJD', partial_image_index: 0 }) + failed);
  t.same(types, ['image_generation.partial_image']);
  t.equal((error as InstanceType<typeof OpenAI.APIError>).code, 'moderation_blocked', "the upstream's error is the one the SDK raises");
  t.match(record, { status: 200, error_code: 'upstream_stream_error' });
});
