import t from 'tap';
import { resumedFirstSequence } from '../../src/dataplane/relay/resumed-stream.ts';

// A resumed responses stream's error event is numbered after `starting_after` only when that
// is a whole number whose next a JS number holds exactly; anything else the upstream judges.

t.test('resumedFirstSequence: the number after a whole starting_after, else undefined', async (t) => {
  t.equal(resumedFirstSequence('?stream=true&starting_after=41'), 42);
  t.equal(resumedFirstSequence('?starting_after=0'), 1);
  t.equal(resumedFirstSequence(`?starting_after=${Number.MAX_SAFE_INTEGER - 1}`), Number.MAX_SAFE_INTEGER);
  t.equal(resumedFirstSequence('?stream=true'), undefined, 'none given');
  t.equal(resumedFirstSequence(''), undefined, 'no query');
  for (const value of ['', '-1', '4.5', '1e3', '%2041', 'abc', String(Number.MAX_SAFE_INTEGER), '99999999999999999999']) t.equal(resumedFirstSequence(`?starting_after=${value}`), undefined, JSON.stringify(value));
});
