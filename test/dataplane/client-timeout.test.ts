import t from 'tap';
import { attemptHeadersTimeout, clientDeadline } from '../../src/dataplane/client-timeout.ts';

const ARRIVED = 1_000_000;

t.test("the SDK's timeout sets a deadline a second before it, from the request's arrival", async (t) => {
  t.equal(clientDeadline({ 'x-stainless-timeout': '600' }, ARRIVED), ARRIVED + 599_000);
  t.equal(clientDeadline({ 'x-stainless-timeout': '1' }, ARRIVED), ARRIVED);
  t.equal(clientDeadline({}, ARRIVED), undefined, 'none sent');
  for (const value of ['', '0', '-5', 'soon', 'Infinity']) t.equal(clientDeadline({ 'x-stainless-timeout': value }, ARRIVED), undefined, `${JSON.stringify(value)} is ignored`);
});

t.test('each attempt waits for what is left of the deadline, never longer than the setting', async (t) => {
  const deadline = ARRIVED + 4000;
  t.equal(attemptHeadersTimeout(600_000, deadline, () => ARRIVED, true), 4000, 'the first attempt');
  t.equal(attemptHeadersTimeout(600_000, deadline, () => ARRIVED + 2500, false), 1500, 'a later attempt, after the time the first took');
  t.equal(attemptHeadersTimeout(2000, deadline, () => ARRIVED, true), 2000, 'a shorter setting stands');
  t.equal(attemptHeadersTimeout(600_000, deadline, () => ARRIVED + 3500, true), 1000, 'the first attempt waits at least a second');
  t.equal(attemptHeadersTimeout(600_000, deadline, () => ARRIVED + 3990, false), undefined, 'no later attempt with less than a quarter second left');
  t.equal(attemptHeadersTimeout(600_000, deadline, () => ARRIVED + 3750, false), 250, 'a quarter second left is enough');
  t.equal(attemptHeadersTimeout(600_000, ARRIVED + 1000, () => ARRIVED + 10, false), 990, 'an SDK timeout of 2 s leaves a fast failure time for another attempt');
});

t.test('without a deadline every attempt waits the setting, and the clock is not read', async (t) => {
  const clock = () => {
    throw new Error('the clock was read');
  };
  t.equal(attemptHeadersTimeout(600_000, undefined, clock, true), 600_000, 'the first attempt');
  t.equal(attemptHeadersTimeout(600_000, undefined, clock, false), 600_000, 'a later attempt');
});
