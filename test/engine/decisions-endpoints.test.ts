import t from 'tap';
import { MODEL_LISTS, OPERATIONS, PROTOCOL_IDS } from '../../src/generated/index.ts';
import { routeTable } from '../../src/handlers/compile-route-table.ts';
import { DECISIONS_ENDPOINTS, DECISIONS_MODEL_LISTS, type DecisionsEndpoint } from '../fixtures/decisions-endpoints.ts';

// The data plane's routes against decisions.md §2 as transcribed by hand in the fixture: every
// endpoint §2 lists is registered for its protocol, and nothing is registered that §2 lacks.

const operations = Object.values(OPERATIONS);

/** A path template with its parameters unnamed: §2 writes `{id}` where the table has `{response_id}`. */
const unnamed = (path: string) => path.replace(/\{\w+\*\}/g, '{*}').replace(/\{\w+\}/g, '{}');

function covers(e: DecisionsEndpoint, method: string, path: string): boolean {
  if (e.under) return path === e.path || path.startsWith(`${e.path}/`);
  return e.method === method && unnamed(e.path) === unnamed(path);
}

t.test('the protocol ids of §2 are the table protocols', async (t) => {
  t.same([...new Set(DECISIONS_ENDPOINTS.map((e) => e.protocol))].sort(), [...PROTOCOL_IDS].sort());
});

t.test('every endpoint of §2 is registered for its protocol', async (t) => {
  for (const e of DECISIONS_ENDPOINTS) {
    const registered = operations.filter((op) => op.protocol === e.protocol && covers(e, op.method, op.path));
    t.ok(registered.length > 0, `${e.protocol} ${e.method} ${e.path}${e.under ? ' (and below)' : ''}`);
  }
  for (const list of DECISIONS_MODEL_LISTS) t.match(MODEL_LISTS.find((m) => m.method === list.method && m.path === list.path), list, `model list ${list.method} ${list.path}`);
});

t.test('the data plane registers no endpoint that §2 lacks', async (t) => {
  const routes = routeTable();
  t.equal(routes.length, operations.length + MODEL_LISTS.length, 'a route per operation and model list');
  for (const { method, target } of routes) {
    if (target.kind === 'operation') {
      const op = target.operation;
      t.ok(DECISIONS_ENDPOINTS.some((e) => e.protocol === op.protocol && covers(e, method, op.path)), `${op.protocol} ${method} ${op.path} (${op.id}) is in §2`);
    } else {
      t.ok(DECISIONS_MODEL_LISTS.some((l) => l.method === method && l.path === target.list.path), `model list ${method} ${target.list.path} is in §2`);
    }
  }
});
