import t from 'tap';
import { GoogleGenAI } from '@google/genai';
import { generateResponse, jsonBody, logOf, rig, writeJson } from './helpers/vendor-wire.ts';

// X-Goog-User-Project (and the `$userProject` system parameter) names the project a request's
// quota and bill go to. A client's names its own project, not the one the gateway's key is of:
// Google refuses it with an API key (403, USER_PROJECT_DENIED), and with a credential that may use
// another project it would move the operator's bill there. Like OpenAI-Organization, it stays with the gateway.

const userProjectDenied = {
  error: {
    code: 403,
    message: 'Caller does not have required permission to use project client-proj. Grant the caller the roles/serviceusage.serviceUsageConsumer role.',
    status: 'PERMISSION_DENIED',
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'USER_PROJECT_DENIED', domain: 'googleapis.com', metadata: { consumer: 'projects/client-proj', service: 'generativelanguage.googleapis.com' } }],
  },
};

t.test('a genai client with x-goog-user-project, or $userProject in the query: neither reaches the upstream, the request is served on the key\'s project', async (t) => {
  const r = await rig(t, { channel: 'ch15', protocols: ['x-generate'], external: 'team', upstreamModel: 'gemini-2.0-flash' }, (req, res) =>
    req.headers['x-goog-user-project'] !== undefined || /userProject/i.test(req.url) ? writeJson(res, 403, userProjectDenied) : writeJson(res, 200, generateResponse('gemini-2.0-flash', 'ok')),
  );
  const genai = new GoogleGenAI({ apiKey: r.keyValue, httpOptions: { baseUrl: r.gw.url, headers: { 'x-goog-user-project': 'client-proj' } } });
  const response = await genai.models.generateContent({ model: 'team', contents: 'x' });
  t.equal(response.text, 'ok');
  t.equal(r.upstream.requests[0]!.headers['x-goog-user-project'], undefined, 'no x-goog-user-project upstream');
  t.match(await logOf(r.gw, response.sdkHttpResponse?.headers?.['x-switchyard-request-id']), { status: 200, attempt_count: 1 });

  for (const query of ['%24userProject=client-proj', '$userProject=client-proj&alt=json', 'userProject=client-proj']) {
    const res = await fetch(`${r.gw.url}/v1beta/models/team:generateContent?${query}`, {
      method: 'POST',
      headers: { 'x-goog-api-key': r.keyValue, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'x' }] }] }),
    });
    t.equal(res.status, 200, query);
    await res.arrayBuffer();
  }
  t.same(
    r.upstream.requests.slice(1).map((q) => q.url),
    ['/v1beta/models/gemini-2.0-flash:generateContent', '/v1beta/models/gemini-2.0-flash:generateContent?alt=json', '/v1beta/models/gemini-2.0-flash:generateContent'],
    'the project parameter left out, the others as sent',
  );
  t.match(jsonBody(r.upstream.requests[0]!), { contents: [{ parts: [{ text: 'x' }] }] });
});
