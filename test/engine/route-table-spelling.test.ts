import t from 'tap';
import { MODEL_LISTS, OPERATIONS } from '../../src/generated/index.ts';
import { routeTable, matchRoute, type RouteMatch } from '../../src/handlers/compile-route-table.ts';

// A path that names a declared endpoint with extra slashes is that endpoint (docs/data-plane.md,
// "Match"), never the responses namespace passthrough: otherwise `GET /v1/responses/resp_1/`
// would step around an N* subset (note 3) and the response affinity of ch31.

const routes = routeTable();

/** The methods a path is taken with when `method` is not one of them (undefined when it is). */
function allowedFor(method: string, path: string): readonly string[] | undefined {
  const match = matchRoute(routes, method, path);
  return match.found ? undefined : match.allowed;
}
const PASSTHROUGH = 'responses-namespace';
/** Values for the path parameters of decisions.md §2's templates. */
const SAMPLE: Record<string, string> = { response_id: 'resp_1', model: 'gemini-x', voice_id: 'voice_1' };

const named = Object.values(OPERATIONS).filter((op) => op.id !== PASSTHROUGH && op.method !== 'ANY');
const concrete = (template: string) => template.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE[name]!);
const paramsOf = (template: string) => Object.fromEntries([...template.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name!, SAMPLE[name!]!]));
const idOf = (m: RouteMatch) => (m.found ? (m.target.kind === 'operation' ? m.target.operation.id : m.target.list.id) : undefined);

/** The path with each one of its slashes doubled in turn, and with one and two trailing slashes. */
function respellings(path: string): string[] {
  const doubled = [...path].flatMap((c, i) => (c === '/' ? [`${path.slice(0, i)}/${path.slice(i)}`] : []));
  return [`${path}/`, `${path}//`, ...doubled];
}

t.test('every declared operation is matched as itself when spelled with a trailing or doubled slash', async (t) => {
  t.ok(named.length > 30, 'the table has its operations');
  for (const op of named) {
    const path = concrete(op.path);
    t.match(matchRoute(routes, op.method, path), { found: true, params: paramsOf(op.path) }, `${op.method} ${path}`);
    t.equal(idOf(matchRoute(routes, op.method, path)), op.id, `${op.method} ${path} is ${op.id}`);
    for (const spelling of respellings(path)) {
      const m = matchRoute(routes, op.method, spelling);
      t.equal(idOf(m), op.id, `${op.method} ${spelling} is ${op.id}`);
      // The parameters are the canonical ones, so the upstream gets the path without the extra slashes.
      t.same(m.found ? m.params : undefined, paramsOf(op.path), `${op.method} ${spelling}: parameters`);
    }
  }
});

t.test('the model lists too', async (t) => {
  for (const list of MODEL_LISTS) {
    for (const spelling of respellings(concrete(list.path))) t.equal(idOf(matchRoute(routes, list.method, spelling)), list.id, `${list.method} ${spelling}`);
  }
});

t.test('responses resource calls with a trailing slash are not namespace passthrough', async (t) => {
  const cases: [string, string, string][] = [
    ['GET', '/v1/responses/resp_1/', 'responses-retrieve'],
    ['DELETE', '/v1/responses/resp_1/', 'responses-delete'],
    ['POST', '/v1/responses/resp_1/cancel/', 'responses-cancel'],
    ['GET', '/v1/responses/resp_1/input_items/', 'responses-input-items'],
    ['POST', '/v1/responses/compact/', 'responses-compact'],
    ['POST', '/v1/responses/input_tokens/', 'responses-input-tokens'],
    ['POST', '/v1/responses/', 'responses-create'],
    // The passthrough forwards its rest re-split at the decoded slashes: an encoded slash would
    // reach the upstream as `/v1/responses/resp_1/cancel`.
    ['POST', '/v1/responses/resp_1%2Fcancel', 'responses-cancel'],
    ['POST', '/v1/responses/resp_1%2Fcancel%2F', 'responses-cancel'],
  ];
  for (const [method, path, id] of cases) t.equal(idOf(matchRoute(routes, method, path)), id, `${method} ${path}`);
});

t.test('other paths under /v1/responses stay namespace passthrough, forwarded as sent', async (t) => {
  t.match(matchRoute(routes, 'POST', '/v1/responses/ns/thing/'), { found: true, target: { operation: { id: PASSTHROUGH } }, params: { rest: 'ns/thing/' } });
  t.match(matchRoute(routes, 'POST', '/v1/responses/ns/thing'), { found: true, target: { operation: { id: PASSTHROUGH } }, params: { rest: 'ns/thing' } });
  // A declared path with another method is neither that operation nor the passthrough: its 405 (as without the slash).
  t.same(allowedFor('GET', '/v1/responses/resp_1/cancel/'), ['POST']);
  t.same(allowedFor('GET', '/v1/responses/resp_1/cancel'), ['POST']);
  t.same([...(allowedFor('HEAD', '/v1/responses/resp_1') ?? [])].sort(), ['DELETE', 'GET']);
});

t.test('a known path with a trailing slash and another method is 405, an unknown one 404', async (t) => {
  t.same(allowedFor('GET', '/v1/chat/completions/'), ['POST']);
  t.same(allowedFor('POST', '/v1/chat/completion/'), []);
  t.match(matchRoute(routes, 'GET', '/v1/responses/%2e%2e/'), { found: false, invalidParameter: true }, 'a dot segment stays refused');
});

t.test('one model of a list is GET /v1/models/{model} or /v1beta/models/{model}, never a generate operation', async (t) => {
  t.match(matchRoute(routes, 'GET', '/v1/models/team-a'), { found: true, target: { list: { id: 'models-retrieve' } }, params: { model: 'team-a' } });
  t.match(matchRoute(routes, 'GET', '/v1beta/models/team-a'), { found: true, target: { list: { id: 'generate-models-get' } }, params: { model: 'team-a' } });
  t.match(matchRoute(routes, 'GET', '/v1/models/team%2Fa'), { found: true, params: { model: 'team/a' } }, 'an encoded slash is part of the name');
  // The operations' `models/{model}:verb` stay theirs, and are POST only.
  t.equal(idOf(matchRoute(routes, 'POST', '/v1beta/models/team-a:generateContent')), 'generate-content');
  t.same(allowedFor('GET', '/v1beta/models/team-a:generateContent'), ['POST']);
  // A generate-style name is a resource name the genai SDK sends unencoded: it may span segments.
  t.match(matchRoute(routes, 'GET', '/v1beta/models/team-a/extra'), { found: true, target: { list: { id: 'generate-models-get' } }, params: { model: 'team-a/extra' } });
  // The openai SDK encodes the name: its `/v1/models/{model}` stays one segment.
  t.same(allowedFor('GET', '/v1/models/team-a/extra'), []);
});
