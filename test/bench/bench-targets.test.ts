import t from 'tap';
import { forkBenchChild } from '../../bench/bench-child.ts';
import { completionBody, doneEvent, nonStreamingRequest, streamEvents, streamingRequest, usageEvent } from '../../bench/completions-fixtures.ts';
import { startSwitchyard } from '../../bench/targets/switchyard.ts';

/**
 * The benchmark compares targets that must do the same job: every target answers the bench's
 * requests with the substitute upstream's bytes, and switchyard runs its whole pipeline
 * (AccessKey check, request logs with usage), as the figures claim.
 */
const post = async (url: string, body: string, authHeader?: string) => {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authHeader === undefined ? {} : { authorization: authHeader }) },
    body,
  });
  return { status: res.status, contentType: res.headers.get('content-type'), text: await res.text() };
};

const upstream = await forkBenchChild(new URL('../../bench/substitute-upstream.ts', import.meta.url));
t.teardown(() => upstream.close());
const floor = await forkBenchChild(new URL('../../bench/floor-proxy.ts', import.meta.url), [upstream.url]);
t.teardown(() => floor.close());
const ceiling = await forkBenchChild(new URL('../../bench/ceiling-proxy.ts', import.meta.url), [upstream.url]);
t.teardown(() => ceiling.close());
const switchyard = await startSwitchyard(upstream.url);
t.teardown(() => switchyard.close());

const targets = [
  { name: 'direct', url: upstream.url, authHeader: undefined },
  { name: 'floor', url: floor.url, authHeader: undefined },
  { name: 'ceiling', url: ceiling.url, authHeader: undefined },
  { name: 'switchyard', url: switchyard.url, authHeader: switchyard.authHeader },
];
const streamed = streamEvents.join('') + doneEvent;

t.test('the substitute upstream sends the usage chunk only when asked', async (t) => {
  const asked = await post(upstream.url, JSON.stringify({ ...JSON.parse(streamingRequest), stream_options: { include_usage: true } }));
  t.equal(asked.text, streamEvents.join('') + usageEvent + doneEvent);
  t.equal((await post(upstream.url, streamingRequest)).text, streamed);
});

for (const target of targets) {
  t.test(`${target.name} answers the bench's requests with the upstream's bytes`, async (t) => {
    const json = await post(target.url, nonStreamingRequest, target.authHeader);
    t.equal(json.status, 200);
    t.match(json.contentType, /application\/json/);
    t.equal(json.text, completionBody.toString());
    const sse = await post(target.url, streamingRequest, target.authHeader);
    t.equal(sse.status, 200);
    t.match(sse.contentType, /text\/event-stream/);
    t.equal(sse.text, streamed, 'no usage chunk: the client did not ask for one');
  });
}

t.test('switchyard checks the AccessKey and logs every request with its usage', async (t) => {
  const refused = await post(switchyard.url, nonStreamingRequest, 'Bearer sy-not-a-key');
  t.equal(refused.status, 401);
  type Item = { status: number; external_model: string; error_code: string | null; usage: Record<string, number> };
  let items: Item[] = [];
  // The log record is appended just after the response ends; a read sees it once appended.
  for (let i = 0; i < 50 && items.length < 3; i++) {
    const res = await fetch(`${switchyard.url}/api/logs?limit=10`, { headers: { authorization: switchyard.managementAuthHeader } });
    items = ((await res.json()) as { data: { items: Item[] } }).data.items;
    if (items.length < 3) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.same(
    items.map((i) => [i.status, i.error_code]),
    [
      [401, 'access_key_invalid'],
      [200, null],
      [200, null],
    ],
  );
  const usage = JSON.parse(usageEvent.slice('data: '.length)).usage as {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details: { cached_tokens: number };
    completion_tokens_details: { reasoning_tokens: number };
  };
  const expected = {
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    cached_tokens: usage.prompt_tokens_details.cached_tokens,
    reasoning_tokens: usage.completion_tokens_details.reasoning_tokens,
  };
  for (const item of items.slice(1)) {
    t.equal(item.external_model, 'bench-model');
    t.same(item.usage, expected, 'usage read from the JSON reply and from the stream it asked usage for');
  }
});
