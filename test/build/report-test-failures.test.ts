import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The failure summary `npm test` prints after a failed tap run, read from tap's saved results.
const script = fileURLToPath(new URL('../../build/report-test-failures.mjs', import.meta.url));
const report = (project: string) => execFileSync(process.execPath, [script, project], { encoding: 'utf8' });

/** How a test file's process ended, as tap's processinfo records it; `parent` is set for processes a test started. */
interface Ending {
  file: string;
  date: string;
  code: number | null;
  signal: string | null;
  parent?: string;
}

/** A project folder in `dir`: tap's saved results, the processes' endings, and the test files that exist. */
function project(dir: string, results: Record<string, string>, testFiles: string[], endings: Ending[] = []): string {
  const write = (file: string, content: string) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  };
  for (const [file, tap] of Object.entries(results)) write(path.join(dir, '.tap', 'test-results', `${file}.tap`), tap);
  for (const file of testFiles) write(path.join(dir, file), '');
  endings.forEach(({ file, parent = null, ...ending }, i) =>
    write(path.join(dir, '.tap', 'processinfo', `${i}.json`), JSON.stringify({ externalID: file, parent, ...ending })),
  );
  return dir;
}

const failing = [
  'TAP version 14',
  '# Subtest: fine first',
  '    ok 1 - a passing point',
  '    1..1',
  'ok 1 - fine first # time=1ms',
  '',
  '# Subtest: broken',
  '    not ok 1 - one is two',
  '      ---',
  '      diff: |',
  '        -2',
  '        +1',
  '      ...',
  '    ',
  '    ok 2 - a later point',
  '    1..2',
  'not ok 2 - broken # time=2ms',
  '1..2',
  '',
].join('\n');
const passing = ['TAP version 14', 'ok 1 - all good', '1..1', ''].join('\n');

t.test('names each failing file with its not ok lines and their diagnostics, and only those', async (t) => {
  const files = ['test/store/broken.test.ts', 'test/fine.test.ts'];
  const out = report(project(t.testdir(), { 'test/store/broken.test.ts': failing, 'test/fine.test.ts': passing, 'test/deleted.test.ts': failing }, files));
  t.match(out, /# Failing test files: 1\n/, 'not the saved results of a test file that no longer exists');
  t.match(out, /## test\/store\/broken\.test\.ts\n {4}not ok 1 - one is two\n {6}---\n {6}diff: \|\n {8}-2\n {8}\+1\n {6}\.\.\./, 'the point and its diagnostic');
  t.match(out, /not ok 2 - broken/, 'the subtest that failed');
  t.notMatch(out, /a later point|a passing point|fine\.test/, 'nothing that passed');
});

t.test("names a file its process's exit code or signal failed, with no not ok line; a passing file's newest process counts", async (t) => {
  const files = ['test/exits.test.ts', 'test/killed.test.ts', 'test/fine.test.ts', 'test/spawns.test.ts'];
  const endings: Ending[] = [
    { file: 'test/exits.test.ts', date: '2026-11-28T00:00:01.000Z', code: 3, signal: null },
    { file: 'test/killed.test.ts', date: '2026-11-28T00:00:01.000Z', code: null, signal: 'SIGTERM' },
    { file: 'test/fine.test.ts', date: '2026-11-27T00:00:00.000Z', code: 1, signal: null },
    { file: 'test/fine.test.ts', date: '2026-11-28T00:00:01.000Z', code: 0, signal: null },
    { file: 'test/spawns.test.ts', date: '2026-11-28T00:00:01.000Z', code: 0, signal: null },
    { file: 'test/spawns.test.ts', date: '2026-11-28T00:00:02.000Z', code: 1, signal: null, parent: 'its test process' },
  ];
  const results = Object.fromEntries(files.map((file) => [file, passing]));
  const out = report(project(t.testdir(), results, files, endings));
  t.match(out, /# Failing test files: 2\n/);
  t.match(out, /## test\/exits\.test\.ts \(its process ended with exit code 3\)/);
  t.match(out, /## test\/killed\.test\.ts \(its process ended with signal SIGTERM\)/);
  t.notMatch(out, /fine\.test|spawns\.test/, 'not an older run of a file, nor a process a test started');
});

t.test('says when the saved results hold no failure, and when there are none at all', async (t) => {
  t.match(report(project(t.testdir(), { 'test/fine.test.ts': passing }, ['test/fine.test.ts'])), /# Failing test files: none in the saved results/);
  t.match(report(t.testdir({})), /# Failing test files: none in the saved results/, 'no .tap folder');
});
