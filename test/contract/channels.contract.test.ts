import t from 'tap';
import { ADAPTERS } from '../../src/adapters/index.ts';
import { CAPABILITY_IDS, CHANNELS, CHANNEL_IDS, OPERATIONS, type ChannelId } from '../../src/generated/index.ts';
import { cellDisagreements, channelDisagreements } from './channel-contract.ts';
import { sweepChannel, type SweepSummary } from './channel-sweep.ts';

// One shared suite, run for every channel the manifests declare: the adapter's declarations
// must match the manifest, and every operation sent through the real data plane must do what
// the channel's cell declares (expected-outcome.ts derives it from the manifest).

/**
 * The channels whose credential kinds all need an authorization flow, so that their native
 * requests cannot be forwarded until the adapters issue's flows land. Written out so that a new
 * channel of that sort, or a static kind renamed away, is noticed here.
 */
const UNCREDENTIALED_CHANNELS = ['ch10', 'ch11', 'ch12', 'ch13', 'ch18'];

const summaries = new Map<ChannelId, SweepSummary>();

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

    t.test('behaviour: every operation through the data plane does what the cell declares', async (t) => {
      const summary = await sweepChannel(t, id);
      summaries.set(id, summary);
      t.same([...summary.operations].sort(), Object.keys(OPERATIONS).sort(), 'a request was sent for every operation');
    });
  });
}

t.test('the sweep as a whole', async (t) => {
  t.same([...summaries.keys()], CHANNEL_IDS, 'every channel was swept');
  const all = [...summaries.values()];
  t.ok(all.reduce((n, s) => n + s.forwarded, 0) > 0, 'some native cases were forwarded');
  const uncredentialed = [...summaries].filter(([, s]) => s.uncredentialed > 0).map(([id]) => id);
  t.same(uncredentialed, UNCREDENTIALED_CHANNELS, 'the channels whose native cases could not be forwarded');
  t.ok(all.reduce((n, s) => n + s.modelDependent.native, 0) > 0, 'the native side of an N/C cell was swept');
  t.ok(all.reduce((n, s) => n + s.modelDependent.converted, 0) > 0, 'the converted side of an N/C cell was swept');
});

t.test('no adapter for a channel the manifests do not declare', async (t) => {
  t.same([...ADAPTERS.keys()].filter((id) => !(CHANNEL_IDS as readonly string[]).includes(id)), []);
});
