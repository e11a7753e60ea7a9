import t from 'tap';
import { joinBaseUrl } from '../../src/upstream/index.ts';
import { upstreamUrl } from '../../src/dataplane/upstream-target.ts';

// Vendors' documented base URLs, pasted as a Group's base_url, against the endpoint each vendor
// documents for the operation (docs/data-plane.md, "Base URLs by vendor"). `versionless` is the
// Group's versionless_api where the vendor's base URL needs it.

const CHAT = '/v1/chat/completions';
const RESPONSES = '/v1/responses';
const EMBEDDINGS = '/v1/embeddings';
const MESSAGES = '/v1/messages';
const COUNT_TOKENS = '/v1/messages/count_tokens';
const GENERATE = '/v1beta/models/{model}:generateContent';
const STREAM_GENERATE = '/v1beta/models/{model}:streamGenerateContent';
const MODELS = '/v1/models';
const GENERATE_MODELS = '/v1beta/models';

interface Row {
  vendor: string;
  base: string;
  versionless?: boolean;
  /** Operation path (as the manifest's upstream path) to the vendor's documented endpoint. */
  endpoints: Array<[string, string]>;
}

const CF = 'https://gateway.ai.cloudflare.com/v1/ACCOUNT/GATEWAY';

const ROWS: Row[] = [
  // OpenAI-compatible: the base URL an OpenAI SDK takes.
  { vendor: 'OpenAI', base: 'https://api.openai.com/v1', endpoints: [[CHAT, 'https://api.openai.com/v1/chat/completions'], [RESPONSES, 'https://api.openai.com/v1/responses'], [MODELS, 'https://api.openai.com/v1/models']] },
  { vendor: 'OpenAI, host only', base: 'https://api.openai.com', endpoints: [[CHAT, 'https://api.openai.com/v1/chat/completions']] },
  { vendor: 'Azure OpenAI v1', base: 'https://res.openai.azure.com/openai/v1/', endpoints: [[CHAT, 'https://res.openai.azure.com/openai/v1/chat/completions'], [RESPONSES, 'https://res.openai.azure.com/openai/v1/responses'], [MODELS, 'https://res.openai.azure.com/openai/v1/models']] },
  { vendor: "Gemini's OpenAI compatibility", base: 'https://generativelanguage.googleapis.com/v1beta/openai/', versionless: true, endpoints: [[CHAT, 'https://generativelanguage.googleapis.com/v1beta/openai/chat/completions'], [EMBEDDINGS, 'https://generativelanguage.googleapis.com/v1beta/openai/embeddings'], [MODELS, 'https://generativelanguage.googleapis.com/v1beta/openai/models']] },
  { vendor: 'Groq', base: 'https://api.groq.com/openai/v1', endpoints: [[CHAT, 'https://api.groq.com/openai/v1/chat/completions'], [RESPONSES, 'https://api.groq.com/openai/v1/responses'], [MODELS, 'https://api.groq.com/openai/v1/models']] },
  { vendor: 'OpenRouter', base: 'https://openrouter.ai/api/v1', endpoints: [[CHAT, 'https://openrouter.ai/api/v1/chat/completions'], [RESPONSES, 'https://openrouter.ai/api/v1/responses'], [MODELS, 'https://openrouter.ai/api/v1/models']] },
  // DeepSeek documents https://api.deepseek.com/chat/completions and takes /v1 as the same API.
  { vendor: 'DeepSeek', base: 'https://api.deepseek.com', endpoints: [[CHAT, 'https://api.deepseek.com/v1/chat/completions'], [MODELS, 'https://api.deepseek.com/v1/models']] },
  { vendor: 'DeepSeek, versionless', base: 'https://api.deepseek.com', versionless: true, endpoints: [[CHAT, 'https://api.deepseek.com/chat/completions'], [MODELS, 'https://api.deepseek.com/models']] },
  { vendor: 'DeepSeek /v1', base: 'https://api.deepseek.com/v1', endpoints: [[CHAT, 'https://api.deepseek.com/v1/chat/completions']] },
  { vendor: 'Mistral', base: 'https://api.mistral.ai/v1', endpoints: [[CHAT, 'https://api.mistral.ai/v1/chat/completions'], [EMBEDDINGS, 'https://api.mistral.ai/v1/embeddings']] },
  { vendor: 'xAI', base: 'https://api.x.ai/v1', endpoints: [[CHAT, 'https://api.x.ai/v1/chat/completions'], [RESPONSES, 'https://api.x.ai/v1/responses']] },
  { vendor: 'Together', base: 'https://api.together.xyz/v1', endpoints: [[CHAT, 'https://api.together.xyz/v1/chat/completions'], [MODELS, 'https://api.together.xyz/v1/models']] },
  { vendor: 'Fireworks', base: 'https://api.fireworks.ai/inference/v1', endpoints: [[CHAT, 'https://api.fireworks.ai/inference/v1/chat/completions'], [MODELS, 'https://api.fireworks.ai/inference/v1/models']] },
  { vendor: 'Perplexity chat completions', base: 'https://api.perplexity.ai', versionless: true, endpoints: [[CHAT, 'https://api.perplexity.ai/chat/completions']] },
  { vendor: 'Perplexity Agent API (responses)', base: 'https://api.perplexity.ai/v1', endpoints: [[RESPONSES, 'https://api.perplexity.ai/v1/responses']] },
  { vendor: 'Cerebras', base: 'https://api.cerebras.ai/v1', endpoints: [[CHAT, 'https://api.cerebras.ai/v1/chat/completions']] },
  { vendor: 'Moonshot', base: 'https://api.moonshot.ai/v1', endpoints: [[CHAT, 'https://api.moonshot.ai/v1/chat/completions'], [RESPONSES, 'https://api.moonshot.ai/v1/responses'], [MODELS, 'https://api.moonshot.ai/v1/models']] },
  { vendor: 'Moonshot China', base: 'https://api.moonshot.cn/v1', endpoints: [[CHAT, 'https://api.moonshot.cn/v1/chat/completions']] },
  { vendor: 'Zhipu BigModel', base: 'https://open.bigmodel.cn/api/paas/v4/', endpoints: [[CHAT, 'https://open.bigmodel.cn/api/paas/v4/chat/completions'], [EMBEDDINGS, 'https://open.bigmodel.cn/api/paas/v4/embeddings']] },
  { vendor: 'Z.ai', base: 'https://api.z.ai/api/paas/v4', endpoints: [[CHAT, 'https://api.z.ai/api/paas/v4/chat/completions']] },
  { vendor: 'Z.ai coding plan', base: 'https://api.z.ai/api/coding/paas/v4', endpoints: [[CHAT, 'https://api.z.ai/api/coding/paas/v4/chat/completions']] },
  { vendor: 'DashScope', base: 'https://dashscope.aliyuncs.com/compatible-mode/v1', endpoints: [[CHAT, 'https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions'], [EMBEDDINGS, 'https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings'], [MODELS, 'https://dashscope.aliyuncs.com/compatible-mode/v1/models']] },
  { vendor: 'Volcengine Ark', base: 'https://ark.cn-beijing.volces.com/api/v3', endpoints: [[CHAT, 'https://ark.cn-beijing.volces.com/api/v3/chat/completions'], [RESPONSES, 'https://ark.cn-beijing.volces.com/api/v3/responses'], [MODELS, 'https://ark.cn-beijing.volces.com/api/v3/models']] },
  { vendor: 'SiliconFlow', base: 'https://api.siliconflow.cn/v1', endpoints: [[CHAT, 'https://api.siliconflow.cn/v1/chat/completions'], [MODELS, 'https://api.siliconflow.cn/v1/models']] },
  { vendor: 'MiniMax', base: 'https://api.minimax.io/v1', endpoints: [[CHAT, 'https://api.minimax.io/v1/chat/completions'], [RESPONSES, 'https://api.minimax.io/v1/responses']] },
  { vendor: 'MiniMax China', base: 'https://api.minimaxi.com/v1', endpoints: [[CHAT, 'https://api.minimaxi.com/v1/chat/completions']] },
  { vendor: 'Baidu Qianfan', base: 'https://qianfan.baidubce.com/v2', endpoints: [[CHAT, 'https://qianfan.baidubce.com/v2/chat/completions'], [MODELS, 'https://qianfan.baidubce.com/v2/models']] },
  { vendor: 'Cloudflare AI Gateway, openai', base: `${CF}/openai`, versionless: true, endpoints: [[CHAT, `${CF}/openai/chat/completions`], [RESPONSES, `${CF}/openai/responses`]] },
  { vendor: 'Cloudflare AI Gateway, compat', base: `${CF}/compat`, versionless: true, endpoints: [[CHAT, `${CF}/compat/chat/completions`]] },
  { vendor: 'Cloudflare AI Gateway, workers-ai', base: `${CF}/workers-ai/v1`, endpoints: [[CHAT, `${CF}/workers-ai/v1/chat/completions`]] },
  { vendor: 'Cloudflare AI Gateway, mistral', base: `${CF}/mistral`, endpoints: [[CHAT, `${CF}/mistral/v1/chat/completions`]] },
  { vendor: 'Cloudflare AI Gateway, anthropic', base: `${CF}/anthropic`, endpoints: [[MESSAGES, `${CF}/anthropic/v1/messages`]] },
  { vendor: 'Cloudflare AI Gateway, google-ai-studio', base: `${CF}/google-ai-studio`, endpoints: [[GENERATE, `${CF}/google-ai-studio/v1beta/models/gemini-2.5-flash:generateContent`]] },
  {
    vendor: 'Cloudflare AI REST API',
    base: 'https://api.cloudflare.com/client/v4/accounts/ACCOUNT/ai/v1',
    endpoints: [
      [CHAT, 'https://api.cloudflare.com/client/v4/accounts/ACCOUNT/ai/v1/chat/completions'],
      [RESPONSES, 'https://api.cloudflare.com/client/v4/accounts/ACCOUNT/ai/v1/responses'],
      [MESSAGES, 'https://api.cloudflare.com/client/v4/accounts/ACCOUNT/ai/v1/messages'],
    ],
  },
  { vendor: 'Vercel AI Gateway', base: 'https://ai-gateway.vercel.sh/v1', endpoints: [[CHAT, 'https://ai-gateway.vercel.sh/v1/chat/completions'], [RESPONSES, 'https://ai-gateway.vercel.sh/v1/responses'], [MODELS, 'https://ai-gateway.vercel.sh/v1/models']] },
  { vendor: 'Ollama', base: 'http://localhost:11434/v1/', endpoints: [[CHAT, 'http://localhost:11434/v1/chat/completions'], [RESPONSES, 'http://localhost:11434/v1/responses'], [MODELS, 'http://localhost:11434/v1/models']] },
  { vendor: 'vLLM', base: 'http://localhost:8000/v1', endpoints: [[CHAT, 'http://localhost:8000/v1/chat/completions'], [MODELS, 'http://localhost:8000/v1/models']] },
  { vendor: 'LM Studio', base: 'http://localhost:1234/v1', endpoints: [[CHAT, 'http://localhost:1234/v1/chat/completions'], [RESPONSES, 'http://localhost:1234/v1/responses']] },
  // Anthropic-compatible: the base URL an Anthropic SDK takes (ANTHROPIC_BASE_URL).
  { vendor: 'Anthropic', base: 'https://api.anthropic.com', endpoints: [[MESSAGES, 'https://api.anthropic.com/v1/messages'], [COUNT_TOKENS, 'https://api.anthropic.com/v1/messages/count_tokens'], [MODELS, 'https://api.anthropic.com/v1/models']] },
  { vendor: 'Anthropic /v1', base: 'https://api.anthropic.com/v1/', endpoints: [[MESSAGES, 'https://api.anthropic.com/v1/messages']] },
  { vendor: 'DeepSeek Anthropic API', base: 'https://api.deepseek.com/anthropic', endpoints: [[MESSAGES, 'https://api.deepseek.com/anthropic/v1/messages']] },
  { vendor: 'Moonshot Anthropic API', base: 'https://api.moonshot.ai/anthropic', endpoints: [[MESSAGES, 'https://api.moonshot.ai/anthropic/v1/messages']] },
  { vendor: 'Zhipu Anthropic API', base: 'https://open.bigmodel.cn/api/anthropic', endpoints: [[MESSAGES, 'https://open.bigmodel.cn/api/anthropic/v1/messages']] },
  { vendor: 'Z.ai Anthropic API', base: 'https://api.z.ai/api/anthropic', endpoints: [[MESSAGES, 'https://api.z.ai/api/anthropic/v1/messages']] },
  { vendor: 'MiniMax Anthropic API', base: 'https://api.minimax.io/anthropic', endpoints: [[MESSAGES, 'https://api.minimax.io/anthropic/v1/messages']] },
  { vendor: 'Qianfan Anthropic API', base: 'https://qianfan.baidubce.com/anthropic', endpoints: [[MESSAGES, 'https://qianfan.baidubce.com/anthropic/v1/messages']] },
  { vendor: 'Ollama Anthropic API', base: 'http://localhost:11434', endpoints: [[MESSAGES, 'http://localhost:11434/v1/messages']] },
  // Gemini: the host, as the genai SDK takes it, or the REST reference's .../v1beta.
  {
    vendor: 'Gemini',
    base: 'https://generativelanguage.googleapis.com',
    endpoints: [
      [GENERATE, 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent'],
      [STREAM_GENERATE, 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent'],
      [GENERATE_MODELS, 'https://generativelanguage.googleapis.com/v1beta/models'],
    ],
  },
  {
    vendor: 'Gemini /v1beta',
    base: 'https://generativelanguage.googleapis.com/v1beta/',
    endpoints: [
      [GENERATE, 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent'],
      [GENERATE_MODELS, 'https://generativelanguage.googleapis.com/v1beta/models'],
    ],
  },
];

t.test("every vendor's documented base URL reaches its documented endpoints", async (t) => {
  for (const row of ROWS) {
    for (const [operation, endpoint] of row.endpoints) {
      const versionless = row.versionless === true;
      const name = `${row.vendor}: ${operation}${versionless ? ' (versionless_api)' : ''}`;
      t.equal(upstreamUrl(row.base, operation, { model: 'client-model' }, 'gemini-2.5-flash', '', versionless), endpoint, `${name}, data plane`);
      if (!operation.includes('{')) t.equal(joinBaseUrl(row.base, operation, versionless), endpoint, `${name}, model discovery`);
    }
  }
});

t.test('the rows that need versionless_api miss the endpoint without it', async (t) => {
  // So the docs' "set versionless_api" stays true: without it these reach the path's version under the base URL.
  for (const row of ROWS.filter((r) => r.versionless === true && !r.vendor.includes('versionless'))) {
    const [operation, endpoint] = row.endpoints[0]!;
    t.not(upstreamUrl(row.base, operation, {}, null, ''), endpoint, row.vendor);
  }
});

t.test('a base URL ending in its version reaches the same endpoints with versionless_api (as an SDK takes it)', async (t) => {
  for (const row of ROWS.filter((r) => r.versionless !== true && /\/v\d+(?:beta)?\/?$/.test(r.base))) {
    for (const [operation, endpoint] of row.endpoints) t.equal(upstreamUrl(row.base, operation, {}, 'gemini-2.5-flash', '', true), endpoint, `${row.vendor}: ${operation}`);
  }
});
