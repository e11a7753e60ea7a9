import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { copyRepo, runTs } from '../helpers/repo-copy.ts';

// Each run of the CLI or codegen is a fresh tsx process (5 to 15 s apiece on a loaded machine):
// this file came near tap's 120 s per-file timeout there, so it sets its own.
t.setTimeout(300_000);

// Walks the README's "Add a channel" steps in a temporary copy of the checkout.
t.test('adding ch36: manifest entry, codegen, contract fails until the adapter declares it, then passes', async (t) => {
  const copy = copyRepo();
  t.teardown(copy.remove);
  const file = (rel: string) => path.join(copy.dir, rel);
  const edit = (rel: string, change: (s: string) => string) => writeFileSync(file(rel), change(readFileSync(file(rel), 'utf8')));

  edit('manifests/channels.yaml', (s) =>
    `${s.trimEnd()}\n\n  - id: ch36\n    credential_kinds: [api_key]\n    core: {CC: N, RC: C, MS: C, GG: "-"}\n    additional: {IMG: "-", EMB: N, CT-M: "-", CT-G: "-", RIT: "-", RRA: "-"}\n    discovery: true\n    proxy: true\n    wire: {default: completions}\n`,
  );
  const codegen = runTs(copy.dir, 'src/cli/main.ts', ['codegen']);
  t.equal(codegen.status, 0, codegen.stderr);
  t.match(readFileSync(file('src/generated/channel-table.ts'), 'utf8'), /"ch36": \{/, 'the generated table has the new channel');

  const matrix = runTs(copy.dir, 'src/cli/main.ts', ['matrix']);
  t.match(matrix.stdout, /\| ch36 \| API key \| N \| C \| C \| - \|/);

  const before = runTs(copy.dir, 'test/contract/channels.contract.test.ts');
  t.not(before.status, 0, 'the contract suite fails without an adapter');
  t.match(before.stdout, /ch36: no adapter is registered for this channel/);

  edit('src/adapters/completions-compatible/adapters.ts', (s) => s.replace("{ channel: 'ch30', native: ['CC', 'RC', 'MS'], convertsInto: [] },", "{ channel: 'ch30', native: ['CC', 'RC', 'MS'], convertsInto: [] },\n    { channel: 'ch36', native: ['CC'] },"));
  const partial = runTs(copy.dir, 'test/contract/channels.contract.test.ts');
  t.not(partial.status, 0, 'an adapter that misses a declared cell still fails');
  t.match(partial.stdout, /ch36 EMB: manifest declares N but the adapter has no native forwarder/);

  edit('src/adapters/completions-compatible/adapters.ts', (s) => s.replace("{ channel: 'ch36', native: ['CC'] },", "{ channel: 'ch36', native: ['CC', 'EMB'] },"));
  const after = runTs(copy.dir, 'test/contract/channels.contract.test.ts');
  t.equal(after.status, 0, `the contract suite passes once the adapter declares its capabilities\n${after.stdout.split('\n').filter((l) => l.includes('not ok')).join('\n')}`);

  const resolved = runTs(copy.dir, 'src/cli/main.ts', ['resolve', '--protocol', 'x-messages', '--operation', 'messages-create', '--channel', 'ch36', '--json']);
  t.match(JSON.parse(resolved.stdout), { ok: true, declared: 'C', wire: 'completions' });
});
