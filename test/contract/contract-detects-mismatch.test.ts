import t from 'tap';
import { ADAPTERS, type ChannelAdapter } from '../../src/adapters/index.ts';
import { CHANNELS } from '../../src/generated/index.ts';
import { cellDisagreements, channelDisagreements } from './channel-contract.ts';

// The contract suite is only worth something if a wrong declaration fails it.
const adapterOf = (id: keyof typeof CHANNELS): ChannelAdapter => {
  const a = ADAPTERS.get(id);
  if (!a) throw new Error(`no adapter ${id}`);
  return a;
};

t.test('a declared N with no native forwarder fails, naming channel and cell', async (t) => {
  const adapter = { ...adapterOf('ch02'), native: [] };
  t.same(cellDisagreements(CHANNELS.ch02, 'CC', adapter), ['ch02 CC: manifest declares N but the adapter has no native forwarder']);
});

t.test('a C with no dialect to convert into fails', async (t) => {
  const adapter = { ...adapterOf('ch14'), convertsInto: [] };
  t.same(cellDisagreements(CHANNELS.ch14, 'CC', adapter), ['ch14 CC: manifest declares C via "messages" but the adapter does not convert into it']);
});

t.test('an adapter capability the manifest does not declare fails', async (t) => {
  const adapter: ChannelAdapter = { ...adapterOf('ch05'), native: ['CC', 'EMB'] };
  t.same(cellDisagreements(CHANNELS.ch05, 'EMB', adapter), ['ch05 EMB: the adapter forwards natively but the manifest declares -']);
});

t.test('N/C needs both the native forwarder and both dialects', async (t) => {
  const adapter: ChannelAdapter = { ...adapterOf('ch18'), convertsInto: ['generate'] };
  t.same(cellDisagreements(CHANNELS.ch18, 'GG', adapter), ['ch18 GG: manifest declares N/C via "messages" but the adapter does not convert into it']);
});

t.test('an N* subset must match the note', async (t) => {
  const adapter: ChannelAdapter = { ...adapterOf('ch34'), nativeSubsets: { RRA: ['compaction', 'namespace_passthrough'] } };
  t.match(cellDisagreements(CHANNELS.ch34, 'RRA', adapter), [/^ch34 RRA: manifest keeps \["compaction"\] natively/]);
});

t.test('credential kinds, proxy and discovery must match', async (t) => {
  const adapter: ChannelAdapter = { ...adapterOf('ch16'), credentialKinds: ['api_key'], proxy: true, discovery: false };
  t.same(channelDisagreements(CHANNELS.ch16, adapter), [
    'ch16 credential: manifest ["api_key","directory_identity"], adapter ["api_key"]',
    'ch16 PROXY: manifest no, adapter yes',
    'ch16 DISC: manifest yes, adapter no',
  ]);
});

t.test('a dialect no cell uses fails', async (t) => {
  const adapter: ChannelAdapter = { ...adapterOf('ch02'), convertsInto: ['completions', 'converse'] };
  t.same(channelDisagreements(CHANNELS.ch02, adapter), ['ch02: the adapter converts into "converse" but no cell of the manifest routes through it']);
});
