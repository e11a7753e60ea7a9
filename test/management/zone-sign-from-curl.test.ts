import t from 'tap';
import { startGateway } from './support/gateway.ts';

// docs/management-api.md, from/to: a `+` zone sign typed as is in a URL reaches the server as a
// space (query strings decode `+` so); a space there, between a time and an HH:MM zone at the
// end, is read as `+`, and nowhere else.

t.test('a zone sign sent as a space is a +; a space elsewhere is still refused', async (t) => {
  const gw = await startGateway(t);
  // A to before the from is refused with the from as read: the way to see it from outside.
  const fromAsRead = async (from: string) => (await gw.api('GET', `/api/logs?from=${from}&to=0`)).json;
  const eightAtPlusEight = Date.UTC(2026, 2, 1, 0, 0, 0);
  t.match(await fromAsRead('2026-03-01T08:00+08:00'), { code: 'VALIDATION_FAILED', data: { field: 'to', reason: 'before_from', from: eightAtPlusEight } }, '+ as curl sends it');
  t.match(await fromAsRead('2026-03-01T08:00%2B08:00'), { data: { reason: 'before_from', from: eightAtPlusEight } }, '%2B');
  t.match(await fromAsRead('2026-03-01T08:00:00.5%2008:00'), { data: { reason: 'before_from', from: eightAtPlusEight + 500 } }, '%20 with seconds and a fraction');
  t.match(await fromAsRead('2026-03-01T08:00-01:30'), { data: { reason: 'before_from', from: Date.UTC(2026, 2, 1, 9, 30) } }, 'a - zone as before');
  for (const refused of ['2026-03-01+08:00', '2026-03-01T08:00+08', '2026-03-01T08:00++08:00', '2026-03-01+T08:00', '2026-03-01T08:00+08:00+', '+2026-03-01T08:00']) {
    t.match((await gw.api('GET', `/api/logs?from=${refused}`)).json, { code: 'VALIDATION_FAILED', data: { field: 'from', reason: 'invalid_value' } }, refused);
  }
});
