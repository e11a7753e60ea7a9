#!/usr/bin/env node
// After a failed `tap` run, `npm test` prints this: each failing file's `not ok` lines with
// their diagnostics, read from tap's saved results (`<project>/.tap/test-results`). A CI log is
// often read from its end, and tap's own output names a failure only where the file's output
// fell. tap keeps the results of a test file that no longer exists: those are left out.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Lines kept after a `not ok` line: its YAML diagnostic, or the start of what follows. */
const CONTEXT_LINES = 40;

function resultFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return resultFiles(full);
    return entry.name.endsWith('.tap') ? [full] : [];
  });
}

function failuresOf(text) {
  const lines = text.split('\n');
  const shown = [];
  lines.forEach((line, i) => {
    if (!/^\s*not ok\b/.test(line)) return;
    const indent = line.length - line.trimStart().length;
    const block = [line];
    for (const next of lines.slice(i + 1, i + 1 + CONTEXT_LINES)) {
      const nextIndent = next.length - next.trimStart().length;
      if (next.trim() !== '' && nextIndent <= indent) break;
      block.push(next);
    }
    shown.push(block.join('\n'));
  });
  return shown;
}

const project = path.resolve(process.argv[2] ?? '.');
const results = path.join(project, '.tap', 'test-results');
const failing = resultFiles(results)
  .sort()
  .map((file) => ({ file: path.relative(results, file).replace(/\.tap$/, ''), results: file }))
  .filter(({ file }) => existsSync(path.join(project, file)))
  .map(({ file, results }) => ({ file, failures: failuresOf(readFileSync(results, 'utf8')) }))
  .filter(({ failures }) => failures.length > 0);

console.log(`\n# Failing test files: ${failing.length === 0 ? 'none in the saved results (see the output above)' : failing.length}`);
for (const { file, failures } of failing) {
  console.log(`\n## ${file}`);
  for (const failure of failures) console.log(failure);
}
