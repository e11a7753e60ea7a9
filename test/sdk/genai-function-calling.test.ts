import t from 'tap';
import { GoogleGenAI, Type, type GenerateContentResponse } from '@google/genai';
import { generateChunks, jsonBody, logOf, rig, writeSse, type SseFrame } from './helpers/vendor-wire.ts';

// The @google/genai helpers with function calling and chat sessions (ch15, native).

const ROUTE = { channel: 'ch15', protocols: ['x-generate'], external: 'team-gen', upstreamModel: 'vendor-gen-1' };

function client(url: string, apiKey: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } });
}

function requestIdOf(response: GenerateContentResponse | undefined): string | undefined {
  return response?.sdkHttpResponse?.headers?.['x-switchyard-request-id'];
}

/** Gemini streams a function call whole, in one chunk, with finishReason STOP and the usage. */
function functionCallChunks(): SseFrame[] {
  return [
    {
      data: {
        candidates: [{ content: { parts: [{ functionCall: { name: 'get_weather', args: { city: 'Lima', unit: 'celsius' } }, thoughtSignature: 'c2lnbmF0dXJl' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 61, candidatesTokenCount: 18, totalTokenCount: 101, thoughtsTokenCount: 22, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 61 }] },
        modelVersion: 'vendor-gen-1',
        responseId: 'gen-up-fc',
      },
    },
  ];
}

const DECLARATION = { name: 'get_weather', parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING }, unit: { type: Type.STRING } } } };

t.test('generateContentStream with function calling: functionCalls from the stream; usage with thoughts logged', async (t) => {
  const r = await rig(t, ROUTE, (_req, res) => writeSse(res, functionCallChunks(), { eol: '\r\n' }));
  const stream = await client(r.gw.url, r.keyValue).models.generateContentStream({ model: 'team-gen', contents: 'weather in Lima?', config: { tools: [{ functionDeclarations: [DECLARATION] }] } });
  const chunks: GenerateContentResponse[] = [];
  for await (const c of stream) chunks.push(c);
  t.equal(chunks.length, 1);
  t.same(chunks[0]?.functionCalls, [{ name: 'get_weather', args: { city: 'Lima', unit: 'celsius' } }]);
  t.match(chunks[0]?.usageMetadata, { promptTokenCount: 61, candidatesTokenCount: 18, thoughtsTokenCount: 22 });
  t.match(jsonBody(r.upstream.requests[0]!), { tools: [{ functionDeclarations: [{ name: 'get_weather' }] }] });
  const log = await logOf(r.gw, requestIdOf(chunks[0]));
  t.match(log?.usage, { input_tokens: 61, output_tokens: 40, reasoning_tokens: 22 });
});

t.test('chats.create().sendMessageStream: two turns through the gateway, history sent on the second, each logged', async (t) => {
  let turn = 0;
  const r = await rig(t, ROUTE, (_req, res) => {
    turn += 1;
    return writeSse(res, turn === 1 ? generateChunks('vendor-gen-1', ['Hi ', 'there'], { promptTokenCount: 5, candidatesTokenCount: 2 }) : generateChunks('vendor-gen-1', ['Sure', '.'], { promptTokenCount: 12, candidatesTokenCount: 3 }), { eol: '\r\n' });
  });
  const chat = client(r.gw.url, r.keyValue).chats.create({ model: 'team-gen' });
  const firstChunks: GenerateContentResponse[] = [];
  for await (const c of await chat.sendMessageStream({ message: 'hello' })) firstChunks.push(c);
  t.equal(firstChunks.map((c) => c.text).join(''), 'Hi there');
  const secondChunks: GenerateContentResponse[] = [];
  for await (const c of await chat.sendMessageStream({ message: 'again?' })) secondChunks.push(c);
  t.equal(secondChunks.map((c) => c.text).join(''), 'Sure.');
  t.equal(r.upstream.requests.length, 2);
  // The SDK keeps each streamed chunk's content as its own history entry, as it does against Google.
  const sent = jsonBody(r.upstream.requests[1]!)['contents'] as { role: string; parts: { text: string }[] }[];
  t.same(
    sent.map((c) => [c.role, c.parts.map((p) => p.text).join('')]),
    [
      ['user', 'hello'],
      ['model', 'Hi '],
      ['model', 'there'],
      ['user', 'again?'],
    ],
  );
  t.match((await logOf(r.gw, requestIdOf(firstChunks[0])))?.usage, { input_tokens: 5, output_tokens: 2 });
  t.match((await logOf(r.gw, requestIdOf(secondChunks[0])))?.usage, { input_tokens: 12, output_tokens: 3 });
});
