import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { copyRepo, REPO_ROOT, runTs } from '../helpers/repo-copy.ts';

// `npm start` builds first (`npm run build`); where dist/ cannot be written the README promises
// one line saying so, naming the path and the system's error, not esbuild's own error blocks.
t.test('npm run build where dist/ is a plain file: one line with the path and the OS error', async (t) => {
  const copy = copyRepo();
  t.teardown(copy.remove);
  cpSync(path.join(REPO_ROOT, 'build'), path.join(copy.dir, 'build'), { recursive: true });
  writeFileSync(path.join(copy.dir, 'dist'), 'not a folder\n');
  const r = runTs(copy.dir, 'build/build-dist.ts');
  t.equal(r.status, 1);
  t.equal(r.stdout, '');
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  t.equal(lines.length, 1, `one line on stderr, got:\n${r.stderr}`);
  t.match(lines[0], /^switchyard: cannot build .*\/dist\/ \(ENOTDIR: not a directory, mkdir '.*dist\/?'\); run `node bin\/switchyard\.js serve` instead$/);
  t.equal(readFileSync(path.join(copy.dir, 'dist'), 'utf8'), 'not a folder\n', 'dist left as it was');
});
