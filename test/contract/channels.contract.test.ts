import t from 'tap';
import { ADAPTERS } from '../../src/adapters/index.ts';
import { CAPABILITY_IDS, CHANNELS, CHANNEL_IDS } from '../../src/generated/index.ts';
import { cellDisagreements, channelDisagreements } from './channel-contract.ts';
import { sweepChannel } from './channel-sweep.ts';
import { sweepSkipReason } from './expected-outcome.ts';

// One shared suite, run for every channel the manifests declare: the adapter's declarations
// must match the manifest, and every operation sent through the real data plane must do what
// the channel's cell declares (skips too are derived from the manifest).
for (const id of CHANNEL_IDS) {
  t.test(`contract ${id}`, async (t) => {
    t.test('declarations: the adapter agrees with the manifest', async (t) => {
      const entry = CHANNELS[id];
      const adapter = ADAPTERS.get(id);
      if (!adapter) {
        t.fail(`${id}: no adapter is registered for this channel`);
        return;
      }
      for (const cap of CAPABILITY_IDS) {
        t.same(cellDisagreements(entry, cap, adapter), [], `${id} ${cap} (${entry.cells[cap].mode})`);
      }
      t.same(channelDisagreements(entry, adapter), [], `${id} credential kinds, proxy, discovery, dialects`);
    });

    const skip = sweepSkipReason(id);
    t.test('behaviour: every operation through the data plane does what the cell declares', skip ? { skip } : {}, async (t) => {
      await sweepChannel(t, id);
    });
  });
}

t.test('no adapter for a channel the manifests do not declare', async (t) => {
  t.same([...ADAPTERS.keys()].filter((id) => !(CHANNEL_IDS as readonly string[]).includes(id)), []);
});
