import t from 'tap';
import { sequenceAfter, startingAfter } from '../../src/dataplane/relay/resumed-stream.ts';

// A resumed responses stream's error event is numbered after `starting_after` only when that
// is a whole number whose next a JS number holds exactly; anything else the upstream judges.

t.test('startingAfter reads starting_after from the query, null without one', async (t) => {
  t.equal(startingAfter('?stream=true&starting_after=41'), '41');
  t.equal(startingAfter('?starting_after='), '');
  t.equal(startingAfter('?stream=true'), null);
  t.equal(startingAfter(''), null);
});

t.test('sequenceAfter: the next number of a whole one, else undefined', async (t) => {
  t.equal(sequenceAfter('41'), 42);
  t.equal(sequenceAfter('0'), 1);
  t.equal(sequenceAfter(String(Number.MAX_SAFE_INTEGER - 1)), Number.MAX_SAFE_INTEGER);
  for (const value of ['', '-1', '4.5', '1e3', ' 41', 'abc', String(Number.MAX_SAFE_INTEGER), '99999999999999999999']) t.equal(sequenceAfter(value), undefined, JSON.stringify(value));
});
