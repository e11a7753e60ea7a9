import t from 'tap';
import { readSpecMatrix } from '../fixtures/read-spec-matrix.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { copyRepo, REPO_ROOT, runTs } from '../helpers/repo-copy.ts';

const spec = readSpecMatrix();
const row = (cells: string[]) => `| ${cells.join(' | ')} |`;

t.test('matrix --format markdown prints both tables exactly as the specification, one row per channel', async (t) => {
  const r = runTs(REPO_ROOT, 'src/cli/main.ts', ['matrix']);
  t.equal(r.status, 0, r.stderr);
  const expected = [
    row(['Channel', ...spec.coreColumns]),
    `|${['Channel', ...spec.coreColumns].map(() => '---').join('|')}|`,
    ...spec.core.map((r) => row([r.channel, ...spec.coreColumns.map((c) => r.cells[c]!)])),
    '',
    row(['Channel', ...spec.additionalColumns]),
    `|${['Channel', ...spec.additionalColumns].map(() => '---').join('|')}|`,
    ...spec.additional.map((r) => row([r.channel, ...spec.additionalColumns.map((c) => r.cells[c]!)])),
    '',
  ].join('\n');
  t.equal(r.stdout, expected);
});

t.test('matrix --format json has the same cells', async (t) => {
  const r = runTs(REPO_ROOT, 'src/cli/main.ts', ['matrix', '--format', 'json']);
  t.equal(r.status, 0, r.stderr);
  const m = JSON.parse(r.stdout);
  t.same(m.core.columns, ['Channel', ...spec.coreColumns]);
  t.same(m.additional.rows.map((r: string[]) => r[0]), spec.additional.map((r) => r.channel));
  t.same(m.additional.rows[20], ['ch21', ...spec.additionalColumns.map((c) => spec.additional[20]!.cells[c])]);
});

t.test('matrix refuses an unknown format', async (t) => {
  const r = runTs(REPO_ROOT, 'src/cli/main.ts', ['matrix', '--format', 'csv']);
  t.equal(r.status, 2);
  t.match(r.stderr, /--format must be markdown or json/);
});

t.test('resolve prints the engine answer and exits 1 on a refusal', async (t) => {
  const converted = runTs(REPO_ROOT, 'src/cli/main.ts', ['resolve', '--protocol', 'x-messages', '--operation', 'messages-create', '--channel', 'ch02', '--json']);
  t.equal(converted.status, 1, 'the data plane refuses a converted route until conversion lands');
  t.match(JSON.parse(converted.stdout), { ok: true, declared: 'C', effective: 'converted', wire: 'completions', served: false, unserved_reason: 'conversion_not_available' });
  const convertedText = runTs(REPO_ROOT, 'src/cli/main.ts', ['resolve', '--protocol', 'x-messages', '--operation', 'messages-create', '--channel', 'ch02']);
  t.match(convertedText.stdout, /^C -> converted; wire completions.*; not served by this version: conversion_not_available$/m);
  const native = runTs(REPO_ROOT, 'src/cli/main.ts', ['resolve', '--protocol', 'x-completions', '--operation', 'chat-completions', '--channel', 'ch02', '--json']);
  t.equal(native.status, 0, native.stderr);
  t.match(JSON.parse(native.stdout), { ok: true, declared: 'N', effective: 'native' });
  t.notOk('served' in JSON.parse(native.stdout), 'a native route carries no unserved flag');
  const refused = runTs(REPO_ROOT, 'src/cli/main.ts', ['resolve', '--protocol', 'x-responses', '--operation', 'responses-retrieve', '--channel', 'ch34']);
  t.equal(refused.status, 1);
  t.match(refused.stdout, /^refused: operation_outside_native_subset: .*\(note 3\)$/m);
  t.equal(refused.stdout.match(/note 3/g)?.length, 1, 'the note named once');
  const usage = runTs(REPO_ROOT, 'src/cli/main.ts', ['resolve', '--protocol', 'x-messages']);
  t.equal(usage.status, 2);
  t.match(usage.stderr, /usage: switchyard resolve/);
});

t.test('manifest validate reports valid manifests', async (t) => {
  const r = runTs(REPO_ROOT, 'src/cli/main.ts', ['manifest', 'validate']);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /manifests: valid/);
});

t.test('manifest validate says when schema problems kept the cross-references from being checked', async (t) => {
  const copy = copyRepo();
  t.teardown(copy.remove);
  const file = path.join(copy.dir, 'manifests', 'channels.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('  - id: ch07\n', '  - id: ch07\n    colour: blue\n'));
  const r = runTs(copy.dir, 'src/cli/main.ts', ['manifest', 'validate']);
  t.equal(r.status, 1, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  t.match(lines[0], /^manifests\/channels\.yaml:\d+:\d+: channels\[6\]\.colour: .*unknown key "colour"/);
  t.equal(lines.at(-1), 'manifests: the cross-references are checked once these problems are fixed');
});
