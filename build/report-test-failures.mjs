#!/usr/bin/env node
// After a failed `tap` run, `npm test` prints this: each failing test file with its `not ok`
// lines and their diagnostics, read from tap's saved results (`<project>/.tap/test-results`),
// and how its process ended when that failed it (`.tap/processinfo`: a file whose assertions
// all passed can still fail by its exit code or a signal). A CI log is often read from its end,
// and tap's own output names a failure only where the file's output fell. tap keeps the records
// of a test file that no longer exists: those are left out.
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

/** How each test file's newest process ended, by file: `exit code N` or `signal S` when it failed, else undefined. */
function endingsOf(dir) {
  const newest = new Map();
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    if (!name.endsWith('.json')) continue;
    let info;
    try {
      info = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
    } catch {
      continue;
    }
    // Processes a test file started itself have a parent; only the test file's own counts.
    if (typeof info.externalID !== 'string' || info.parent !== null) continue;
    const known = newest.get(info.externalID);
    if (known === undefined || String(info.date) > String(known.date)) newest.set(info.externalID, info);
  }
  const endings = new Map();
  for (const [file, info] of newest) {
    if (info.signal) endings.set(file, `signal ${info.signal}`);
    else if (info.code !== 0) endings.set(file, `exit code ${info.code}`);
  }
  return endings;
}

const project = path.resolve(process.argv[2] ?? '.');
const results = path.join(project, '.tap', 'test-results');
const endings = endingsOf(path.join(project, '.tap', 'processinfo'));
const failuresByFile = new Map(resultFiles(results).map((file) => [path.relative(results, file).replace(/\.tap$/, ''), failuresOf(readFileSync(file, 'utf8'))]));
const failing = [...new Set([...failuresByFile.keys(), ...endings.keys()])]
  .sort()
  .filter((file) => existsSync(path.join(project, file)))
  .map((file) => ({ file, failures: failuresByFile.get(file) ?? [], ending: endings.get(file) }))
  .filter(({ failures, ending }) => failures.length > 0 || ending !== undefined);

console.log(`\n# Failing test files: ${failing.length === 0 ? 'none in the saved results (see the output above)' : failing.length}`);
for (const { file, failures, ending } of failing) {
  console.log(`\n## ${file}${ending === undefined ? '' : ` (its process ended with ${ending})`}`);
  for (const failure of failures) console.log(failure);
}
