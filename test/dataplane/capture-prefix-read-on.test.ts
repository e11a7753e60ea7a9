import { PassThrough } from 'node:stream';
import t from 'tap';
import { capturePrefix } from '../../src/dataplane/capture-prefix.ts';

// readOn() reads a refused body's rest for its record until the body ends, fails or passes the
// kept prefix. A client already gone when it is asked settles it at once: no end or error is
// left to come (src/dataplane/capture-prefix.ts).

t.test('readOn settles at once, not ended, when its source is already gone', async (t) => {
  const source = new PassThrough();
  // A long silence watch: only the settling at once can end this test in time.
  const tee = capturePrefix(source, 1024, 1 << 20, 60_000);
  source.write(Buffer.from('head'));
  source.destroy();
  await new Promise((resolve) => setImmediate(resolve));
  const captured = await Promise.race([tee.readOn(), new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 2000))]);
  t.not(captured, 'waiting', 'settled without waiting for the silence watch');
  t.match(captured, { ended: false, total: 4 });
  t.equal(captured === 'waiting' ? '' : captured.bytes.toString(), 'head', 'what arrived');
});

t.test('readOn reads the rest of a body that then ends', async (t) => {
  const source = new PassThrough();
  const tee = capturePrefix(source, 1024, 1 << 20, 60_000);
  const read = tee.readOn();
  source.end(Buffer.from('whole body'));
  t.match(await read, { ended: true, total: 10 });
});
