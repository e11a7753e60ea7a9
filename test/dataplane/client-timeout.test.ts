import t from 'tap';
import { withinClientTimeout } from '../../src/dataplane/client-timeout.ts';
import type { ForwardDeps } from '../../src/dataplane/forward-native.ts';

const deps = { headersTimeoutMs: 600_000 } as ForwardDeps;

t.test("the SDK's timeout shortens the headers timeout to a second before it, never below a second, never lengthens it", async (t) => {
  t.equal(withinClientTimeout(deps, { 'x-stainless-timeout': '600' }).headersTimeoutMs, 599_000);
  t.equal(withinClientTimeout(deps, { 'x-stainless-timeout': '1' }).headersTimeoutMs, 1000);
  t.equal(withinClientTimeout(deps, { 'x-stainless-timeout': '900' }), deps, 'a longer one changes nothing');
  t.equal(withinClientTimeout(deps, {}), deps, 'none sent');
  for (const value of ['', '0', '-5', 'soon', 'Infinity']) t.equal(withinClientTimeout(deps, { 'x-stainless-timeout': value }), deps, `${JSON.stringify(value)} is ignored`);
});
