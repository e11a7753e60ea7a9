import t from 'tap';
import { SessionTicker } from '../../src/dataplane/session-ticker.ts';
import { eventually } from './helpers/dataplane-scenarios.ts';

// One timer runs every open session's checks (docs/data-plane.md, WebSocket sessions).

t.test('every registered check runs at each tick until it is removed', async (t) => {
  const ticker = new SessionTicker(5);
  const runs = { a: 0, b: 0 };
  const removeA = ticker.add(() => runs.a++);
  await eventually(() => runs.a >= 2 || undefined, 'the first check to run twice');
  const removeB = ticker.add(() => runs.b++);
  await eventually(() => runs.b >= 2 || undefined, 'the second check to run twice');
  removeA();
  const aAtRemoval = runs.a;
  const bAtRemoval = runs.b;
  await eventually(() => runs.b >= bAtRemoval + 3 || undefined, 'three more ticks');
  t.equal(runs.a, aAtRemoval, 'a removed check runs no more');
  removeB();
});

t.test('a ticker left empty starts its timer again for the next check', async (t) => {
  const ticker = new SessionTicker(5);
  let first = 0;
  ticker.add(() => first++)();
  let second = 0;
  const remove = ticker.add(() => second++);
  await eventually(() => second >= 2 || undefined, 'the check added after the ticker was empty to run');
  remove();
  t.equal(first, 0, 'the check removed before any tick never ran');
  t.ok(second >= 2);
});
