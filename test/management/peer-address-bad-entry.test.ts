import t from 'tap';
import { peerAddress } from '../../src/auth/peer-address.ts';

t.test('a trusted-proxy entry that is no address or CIDR is skipped, not thrown on', async (t) => {
  // 10.0.0.0/99 got into a hand-edited file before the load check: node's BlockList throws on it.
  t.equal(peerAddress('127.0.0.1', '203.0.113.9', ['10.0.0.0/99', '127.0.0.1']), '203.0.113.9', 'the good entry still trusted');
  t.equal(peerAddress('127.0.0.1', '203.0.113.9', ['10.0.0.0/99']), '127.0.0.1', 'nothing else trusted');
});
