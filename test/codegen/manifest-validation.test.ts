import { readFileSync } from 'node:fs';
import t from 'tap';
import { validateManifests, formatProblem, type ManifestProblem } from '../../codegen/index.ts';

const root = new URL('../..', import.meta.url).pathname;
const channelsSource = readFileSync(`${root}manifests/channels.yaml`, 'utf8');
const protocolsSource = readFileSync(`${root}manifests/protocols.yaml`, 'utf8');

/** Line and column (1-based) of the `occurrence`-th (0-based) occurrence of `needle` in `text`. */
function position(text: string, needle: string, offsetInNeedle = 0, occurrence = 0): { line: number; column: number } {
  let index = text.indexOf(needle);
  for (let i = 0; i < occurrence && index >= 0; i++) index = text.indexOf(needle, index + 1);
  if (index < 0) throw new Error(`"${needle}" not in text`);
  const before = text.slice(0, index + offsetInNeedle);
  return { line: before.split('\n').length, column: before.length - before.lastIndexOf('\n') };
}

function replaceOnce(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`"${from}" not in manifest`);
  return text.replace(from, to);
}

function check(sources: { channels?: string; protocols?: string }): ManifestProblem[] {
  return validateManifests(root, sources).problems;
}

t.test('the committed manifests are valid', async (t) => {
  t.same(check({}), []);
});

t.test('unknown key', async (t) => {
  const channels = replaceOnce(channelsSource, '  - id: ch07\n', '  - id: ch07\n    colour: blue\n');
  const problems = check({ channels });
  t.equal(problems.length, 1, problems.map(formatProblem).join('\n'));
  t.match(problems[0], { file: 'manifests/channels.yaml', field: 'channels[6].colour', message: /unknown key "colour"/, ...position(channels, 'colour: blue') });
});

t.test('mode symbol outside the five', async (t) => {
  const channels = replaceOnce(channelsSource, '  - id: ch05\n    credential_kinds: [api_key]\n    core: {CC: N,', '  - id: ch05\n    credential_kinds: [api_key]\n    core: {CC: Y,');
  const problems = check({ channels });
  t.equal(problems.length, 1, problems.map(formatProblem).join('\n'));
  t.match(problems[0], { file: 'manifests/channels.yaml', field: 'channels[4].core.CC', message: /mode symbol "Y" is not one of N, C, N\/C, N\*, -/, ...position(channels, 'core: {CC: Y', 'core: {CC: '.length) });
});

t.test('unknown operation id', async (t) => {
  const protocols = replaceOnce(protocolsSource, 'primary_operation: messages-create', 'primary_operation: messages-creat');
  const problems = check({ protocols });
  t.equal(problems.length, 1, problems.map(formatProblem).join('\n'));
  t.match(problems[0], { file: 'manifests/protocols.yaml', field: 'protocols[2].primary_operation', message: /unknown operation id "messages-creat"/, ...position(protocols, 'messages-creat', 0) });
});

t.test('unknown protocol capability id on a channel', async (t) => {
  const channels = replaceOnce(channelsSource, 'extra: {x-suite: N}', 'extra: {x-suit: N}');
  const problems = check({ channels });
  t.ok(problems.length >= 1);
  t.match(problems[0], { file: 'manifests/channels.yaml', field: 'channels[2].extra.x-suit', message: /unknown extra protocol capability "x-suit"/, ...position(channels, 'x-suit: N') });
});

t.test('note referring to a missing channel', async (t) => {
  const channels = replaceOnce(channelsSource, '    channels: [ch16, ch17, ch18]\n    rules:\n      - {kind: no_managed_proxy, channels: [ch16, ch17, ch18]}', '    channels: [ch16, ch17, ch18, ch99]\n    rules:\n      - {kind: no_managed_proxy, channels: [ch16, ch17, ch18]}');
  const problems = check({ channels });
  t.equal(problems.length, 1, problems.map(formatProblem).join('\n'));
  t.match(problems[0], { file: 'manifests/channels.yaml', field: 'notes[13].channels[3]', message: /note 14 refers to missing channel "ch99"/, ...position(channels, 'ch99') });
});

t.test('override for a channel outside its shared block', async (t) => {
  const channels = replaceOnce(channelsSource, '{channel: ch25, additional: {EMB: N}}', '{channel: ch05, additional: {EMB: N}}');
  const problems = check({ channels });
  t.equal(problems.length, 1, problems.map(formatProblem).join('\n'));
  t.match(problems[0], { file: 'manifests/channels.yaml', field: 'shared_blocks[0].overrides[1].channel', message: /override for channel "ch05" which is outside shared block "ch19-ch30"/, ...position(channels, 'ch05, additional: {EMB: N}') });
});

t.test('duplicate channel id', async (t) => {
  const channels = replaceOnce(channelsSource, '  - id: ch06\n', '  - id: ch05\n');
  const problems = check({ channels });
  t.ok(problems.some((p) => p.message === 'duplicate channel id "ch05"'), problems.map(formatProblem).join('\n'));
  const dup = problems.find((p) => p.message === 'duplicate channel id "ch05"');
  t.match(dup, { file: 'manifests/channels.yaml', field: 'channels[5].id', ...position(channels, '- id: ch05', '- id: '.length, 1) });
});

t.test('several problems are all reported, one message each', async (t) => {
  let channels = replaceOnce(channelsSource, '  - id: ch07\n', '  - id: ch07\n    colour: blue\n');
  channels = replaceOnce(channels, 'core: {CC: N, RC: N, MS: C, GG: C}', 'core: {CC: N, RC: Q, MS: C, GG: C}');
  const problems = check({ channels });
  t.equal(problems.length, 2, problems.map(formatProblem).join('\n'));
  t.ok(problems.every((p) => /^manifests\/channels\.yaml:\d+:\d+: \S+: .+/.test(formatProblem(p))));
});

t.test('semantic rules the engine depends on', async (t) => {
  const noWire = replaceOnce(channelsSource, '  - id: ch20\n    credential_kinds: [api_key]\n    core: {CC: N, RC: C, MS: C, GG: C}\n    shared: ch19-ch30\n    wire: {default: completions}\n', '  - id: ch20\n    credential_kinds: [api_key]\n    core: {CC: N, RC: C, MS: C, GG: C}\n    shared: ch19-ch30\n');
  t.match(check({ channels: noWire }), [{ message: /RC is "C" but the channel declares no wire dialect/ }]);
  const rerankConverted = replaceOnce(channelsSource, 'extra: {rerank: N}', 'extra: {rerank: C}');
  t.match(check({ channels: rerankConverted }), [{ message: /mode "C" is not allowed for "rerank"/ }]);
  const yamlBroken = check({ channels: `${channelsSource}\n  - id: [unclosed\n` });
  t.match(yamlBroken, [{ file: 'manifests/channels.yaml', field: '(yaml)' }]);
});

t.test('problems found before the cross-references say which stages did not run', async (t) => {
  const schemaOnly = validateManifests(root, { channels: replaceOnce(channelsSource, '  - id: ch07\n', '  - id: ch07\n    colour: blue\n') });
  t.equal(schemaOnly.unchecked, 'the cross-references');
  const yamlBroken = validateManifests(root, { channels: `${channelsSource}\n  - id: [unclosed\n` });
  t.equal(yamlBroken.unchecked, 'the schemas and the cross-references');
  const crossReference = validateManifests(root, { protocols: replaceOnce(protocolsSource, 'primary_operation: messages-create', 'primary_operation: messages-creat') });
  t.equal(crossReference.problems.length, 1);
  t.equal(crossReference.unchecked, undefined, 'every stage ran');
});
