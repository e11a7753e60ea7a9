import { readFileSync } from 'node:fs';
import t from 'tap';
import { formatProblem, validateManifests, type ManifestProblem } from '../../codegen/index.ts';
import { expandChannel } from '../../codegen/expand-channels.ts';
import { CHANNELS } from '../../src/generated/index.ts';
import type { ChannelsManifest } from '../../src/generated/types/channels-manifest.ts';
import type { ProtocolsManifest } from '../../src/generated/types/protocols-manifest.ts';

// The two channel-level wire fields: `stream_usage` (does the gateway ask for stream usage) and
// `credential_headers` (where the upstream credential goes, per protocol).

const root = new URL('../..', import.meta.url).pathname;
const channelsSource = readFileSync(`${root}manifests/channels.yaml`, 'utf8');

function withCh05(line: string): ManifestProblem[] {
  const from = '  - id: ch05\n    credential_kinds: [api_key]\n';
  if (!channelsSource.includes(from)) throw new Error('ch05 not in manifest');
  return validateManifests(root, { channels: channelsSource.replace(from, `${from}    ${line}\n`) }).problems;
}

t.test('the declared values are accepted', async (t) => {
  for (const line of ['stream_usage: unasked', 'stream_usage: requested', 'credential_headers: {x-messages: [bearer]}', 'credential_headers: {x-completions: [x-api-key, bearer], x-generate: [x-goog-api-key]}']) {
    const problems = withCh05(line);
    t.same(problems, [], `${line}: ${problems.map(formatProblem).join('\n')}`);
  }
});

t.test('stream_usage takes only requested or unasked', async (t) => {
  const problems = withCh05('stream_usage: sometimes');
  t.equal(problems.length, 1, problems.map(formatProblem).join('\n'));
  t.match(problems[0], { file: 'manifests/channels.yaml', field: 'channels[4].stream_usage' });
  t.match(withCh05('stream_usage: true'), [{ field: 'channels[4].stream_usage' }], 'a boolean is no value of it');
});

t.test('credential_headers: known headers, at least one, no repeats, known protocols', async (t) => {
  const unknownHeader = withCh05('credential_headers: {x-messages: [api-key]}');
  t.equal(unknownHeader.length, 1, unknownHeader.map(formatProblem).join('\n'));
  t.match(unknownHeader[0], { field: 'channels[4].credential_headers.x-messages[0]' });
  t.equal(withCh05('credential_headers: {x-messages: []}').length, 1, 'an empty list');
  t.equal(withCh05('credential_headers: {x-messages: [bearer, bearer]}').length, 1, 'a header twice');
  t.equal(withCh05('credential_headers: {}').length, 1, 'no protocol');
  const unknownProtocol = withCh05('credential_headers: {x-mesages: [bearer]}');
  t.equal(unknownProtocol.length, 1, unknownProtocol.map(formatProblem).join('\n'));
  t.match(unknownProtocol[0], { field: 'channels[4].credential_headers.x-mesages', message: /unknown protocol id "x-mesages"/ });
});

t.test('codegen carries both into the channel table', async (t) => {
  const { manifests } = validateManifests(root);
  const channels = manifests!.channels.data as ChannelsManifest;
  const expanded = (id: string) => expandChannel(channels.channels.find((c) => c.id === id)!, channels, manifests!.protocols.data as ProtocolsManifest);
  t.equal(expanded('ch03').stream_usage, 'unasked', 'ch03 is not asked for stream usage');
  t.equal(expanded('ch02').stream_usage, 'requested', 'the default');
  // docs/data-plane.md step 7: messages to ch29/ch30 as a bearer token, to ch19 and ch31-ch34 in both headers.
  for (const id of ['ch29', 'ch30']) t.same(expanded(id).credential_headers, { 'x-messages': ['bearer'] }, id);
  for (const id of ['ch19', 'ch31', 'ch32', 'ch33', 'ch34']) t.same(expanded(id).credential_headers, { 'x-messages': ['x-api-key', 'bearer'] }, id);
  t.notOk('credential_headers' in expanded('ch14'), "ch14 keeps the messages protocol's own x-api-key");
  for (const id of ['ch02', 'ch03', 'ch14', 'ch19', 'ch29'] as const) t.same(CHANNELS[id], expanded(id), `${id}: the committed table is this expansion`);
});
