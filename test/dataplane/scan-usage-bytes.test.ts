import t from 'tap';
import { compiledUsageTables, readRawCounters } from '../../src/usage/map-raw-usage.ts';
import { readSegments } from '../../src/usage/read-path.ts';
import { scanUsageEvent, scanUsageTail, type ScannedUsage } from '../../src/usage/scan-usage-bytes.ts';
import { extractUsageFromBytes, extractUsageFromText, isUsageOnlyChunk, StreamUsageAccumulator, type UsageStyle } from '../../src/usage/index.ts';

/** What JSON.parse makes of an event: the top-level usage object's counters and the usage-only test. */
function parsedReading(style: UsageStyle, text: string): ScannedUsage | 'invalid' {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'invalid';
  }
  const table = compiledUsageTables[style];
  const usage = readSegments(parsed, table.stream[0]!.path);
  const counters = usage !== null && typeof usage === 'object' ? readRawCounters(table, usage) : undefined;
  return { counters, usageOnlyChunk: isUsageOnlyChunk(parsed) };
}

function scanEvent(style: UsageStyle, text: string): ScannedUsage | undefined {
  const bytes = Buffer.from(`data: ${text}\n\n`);
  return scanUsageEvent(bytes, 6, bytes.length - 2, compiledUsageTables[style].streamScan!);
}

const usageChunk = { id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 24, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 2 } } };

t.test('the common events are read from their bytes, with what JSON.parse gives', async (t) => {
  const events: Array<[UsageStyle, string]> = [
    ['completions', JSON.stringify(usageChunk)],
    ['completions', JSON.stringify({ ...usageChunk, choices: [{ index: 0, delta: { content: 'usage: "x" \u00e9\u4e2d \\ \n' }, finish_reason: null }] })],
    ['completions', JSON.stringify({ id: 'c2', choices: [{ delta: {} }], usage: null })],
    ['completions', JSON.stringify({ id: 'c3', choices: [] })],
    // An escaped key inside a nested value the scan skips (a tool call's arguments object, say).
    ['completions', '{"choices":[{"index":0,"delta":{"tool\\u005fcalls":[]},"finish_reason":null}],"usage":{"prompt_tokens":4,"completion_tokens":1}}'],
    ['completions', ` { "choices" : [ ] , "usage" : { "prompt_tokens" : 1.5e1 , "completion_tokens" : -1 } } `],
    // OpenRouter's cache writes, nested beside the cache reads.
    ['completions', JSON.stringify({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 10, cache_write_tokens: 15 } } })],
    // DashScope's, beside a breakdown object the scan skips.
    ['completions', JSON.stringify({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 10, cache_creation: { ephemeral_5m_input_tokens: 15 }, cache_creation_input_tokens: 15, cache_type: 'ephemeral' } } })],
    ['generate', JSON.stringify({ candidates: [{ content: { parts: [{ text: 'hi' }] } }], usageMetadata: { promptTokenCount: 5, thoughtsTokenCount: 7, candidatesTokenCount: 1 } })],
  ];
  for (const [style, text] of events) {
    const scanned = scanEvent(style, text);
    t.ok(scanned, `read from bytes: ${text.slice(0, 60)}`);
    t.same(scanned, parsedReading(style, text), text.slice(0, 60));
  }
  t.same(scanEvent('completions', JSON.stringify(usageChunk))?.counters, [24, 6, 2, 3, undefined, undefined, undefined, 2, undefined, undefined, undefined, undefined], 'the counters in the compiled table\'s order (rows, fallbacks, total_tokens)');
  t.equal(scanEvent('completions', JSON.stringify(usageChunk))?.usageOnlyChunk, true);
});

t.test('a usage chunk without a choices member, or with a null one, is usage-only, as JSON.parse reads it', async (t) => {
  const { choices: _, ...noChoices } = usageChunk;
  const texts = [
    JSON.stringify(noChoices),
    '{"id":"c","usage":{"prompt_tokens":1}}',
    '{"usage":{}}',
    '{"choices":null,"usage":{"prompt_tokens":1}}',
    '{"usage":{"prompt_tokens":1}, "choices" : null }',
    '{"choices":[1],"usage":{"prompt_tokens":1},"choices":null}',
    '{"choices":null,"usage":{"prompt_tokens":1},"choices":[1]}',
    '{"choices":"null","usage":{"prompt_tokens":1}}',
    '{"choices":false,"usage":{"prompt_tokens":1}}',
    '{"choices":0,"usage":{"prompt_tokens":1}}',
    '{"choices":null}',
    '{"choices":{},"usage":{"prompt_tokens":1}}',
    '{"usage":null}',
    '{"id":"c"}',
    '{"__proto__":{"choices":[1]},"usage":{"prompt_tokens":1}}',
    '{"a":{"choices":[1]},"usage":{"prompt_tokens":1}}',
  ];
  for (const text of texts) {
    const scanned = scanEvent('completions', text);
    t.ok(scanned, `read from bytes: ${text.slice(0, 60)}`);
    t.same(scanned, parsedReading('completions', text), text.slice(0, 60));
  }
  t.equal(scanEvent('completions', JSON.stringify(noChoices))?.usageOnlyChunk, true);
  t.equal(isUsageOnlyChunk(noChoices), true);
  t.equal(scanEvent('completions', '{"choices":null,"usage":{"prompt_tokens":1}}')?.usageOnlyChunk, true, 'read from bytes: a null choices is none');
  t.equal(isUsageOnlyChunk({ choices: null, usage: { prompt_tokens: 1 } }), true, 'a null choices is none');
  t.equal(isUsageOnlyChunk({ choices: false, usage: { prompt_tokens: 1 } }), false, 'another choices member that is no array is not');
  t.equal(isUsageOnlyChunk({ id: 'c' }), false);
});

t.test('duplicate members: the last one wins, as in JSON.parse', async (t) => {
  const texts = [
    '{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":5}},"usage":{"prompt_tokens":2}}',
    '{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":9}}',
    '{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":{}}}',
    '{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":3}}',
    '{"choices":[],"usage":{"prompt_tokens":1},"choices":[1]}',
    '{"choices":[1],"usage":{"prompt_tokens":1},"choices":[]}',
    '{"choices":[],"usage":{"prompt_tokens":1},"usage":null}',
    '{"usage":{"prompt_tokens":1},"choices":[1]}',
    '{"choices":[1],"usage":{"prompt_tokens":1},"choices":[]}',
  ];
  for (const text of texts) t.same(scanEvent('completions', text), parsedReading('completions', text), text);
});

t.test('counters that are not plain counts read as JSON.parse and readCount read them', async (t) => {
  const values = ['0', '-0', '12', '1.25', '3e2', '2E-1', '12345678901234567890', '1e400', '-5', '"7"', 'true', 'null', '{"a":1}', '[1]', '9'.repeat(200_000)];
  for (const value of values) {
    const text = `{"choices":[],"usage":{"prompt_tokens":${value}}}`;
    t.same(scanEvent('completions', text), parsedReading('completions', text), value.slice(0, 20));
  }
});

t.test('what it does not read exactly as JSON.parse, or what is not JSON, it leaves to JSON.parse (undefined)', async (t) => {
  const leftToParse = [
    '{"choices":[],"us\\u0061ge":{"prompt_tokens":1}}',
    '{"choices":[],"usage":[1]}',
    '{"choices":[],"usage":{"prompt_tokens":1},}',
    '{"choices":[],"usage":{"prompt_tokens":01}}',
    '{"choices":[] "usage":{}}',
    '{"choices":[],"usage":{"prompt_tokens":1}',
    '{"choices":[],"usage":{"prompt_tokens":1}} x',
    '{"a":"\u0001","usage":{}}',
    '{"a":"\\x","usage":{}}',
    '{"a":"\\u12g4","usage":{}}',
    '{"a":tru,"usage":{}}',
    '{"a":1.,"usage":{}}',
    '{"a":-,"usage":{}}',
    '{"a":1e,"usage":{}}',
    '[{"usage":{}}]',
    '{"choices":[],\n"usage":{"prompt_tokens":1}}',
    '{"choices":nul,"usage":{"prompt_tokens":1}}',
    '{"choices":nullx,"usage":{"prompt_tokens":1}}',
    '{"usage":{"prompt_tokens":1},"choices":nul',
    `{"a":${'['.repeat(40)}${']'.repeat(40)},"usage":{}}`,
    '',
  ];
  for (const text of leftToParse) t.equal(scanEvent('completions', text), undefined, JSON.stringify(text));
  t.equal(parsedReading('completions', '{"choices":[],"usage":{"prompt_tokens":1},}'), 'invalid', 'JSON.parse refuses these too (one checked)');
});

t.test('a body\'s tail from its usage member; a nested last key leaves the body to JSON.parse', async (t) => {
  const table = compiledUsageTables.completions;
  const body = Buffer.from(JSON.stringify({ id: 'x', choices: [{ message: { content: '"usage": {"prompt_tokens": 99}' } }], usage: { prompt_tokens: 3, completion_tokens: 4 }, system_fingerprint: 'fp' }) + '\n');
  t.same(scanUsageTail(body, body.lastIndexOf('"usage"'), table.bodyScan!), { counters: [3, 4, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined], usageOnlyChunk: false });
  const nestedLast = Buffer.from('{"usage":{"prompt_tokens":1},"b":{"usage":2}}');
  t.equal(scanUsageTail(nestedLast, nestedLast.lastIndexOf('"usage"'), table.bodyScan!), undefined);
  for (const text of [body.toString(), nestedLast.toString(), '{"usage":[1]}', '<html>"usage"</html>', '{"usage":{"prompt_tokens":"1"}}']) {
    t.same(extractUsageFromBytes('completions', Buffer.from(text)), extractUsageFromText('completions', text), `same usage as from the text: ${text.slice(0, 40)}`);
  }
});

t.test('the stream accumulator reads an event from its bytes only where the style allows it', async (t) => {
  const bytes = Buffer.from(JSON.stringify(usageChunk));
  const completions = new StreamUsageAccumulator('completions');
  t.ok(completions.pushBytes(bytes, 0, bytes.length));
  t.same(completions.result(), { input_tokens: 24, output_tokens: 6, cached_tokens: 3, reasoning_tokens: 2 });
  const messages = new StreamUsageAccumulator('messages');
  t.equal(messages.pushBytes(bytes, 0, bytes.length), undefined, 'messages usage depends on the event type: parsed instead');
  t.equal(messages.result(), undefined, 'nothing fed');
  const broken = new StreamUsageAccumulator('completions');
  t.equal(broken.pushBytes(Buffer.from('{"usage":{"prompt_tokens":1}'), 0, 28), undefined);
  t.equal(broken.result(), undefined, 'an event left to JSON.parse feeds nothing');
});
