import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * `npm run bench:in-process` reports figures only when every answer of both handlers was the
 * upstream's 200 (a handler that refused fast would look cheap). A short run checks that the
 * harness still proxies for real; it measures nothing.
 */
t.test('the in-process harness proxies both scenarios through both handlers and reports them', async (t) => {
  const script = fileURLToPath(new URL('../../bench/in-process-cost.ts', import.meta.url));
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, ['--import=tsx', script], { env: { ...process.env, IN_PROCESS_REQUESTS: '200', IN_PROCESS_ROUNDS: '1' }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
  t.equal(code, 0, 'exits cleanly', { stderr });
  for (const scenario of ['non-streaming', 'streaming']) {
    const line = stdout.split('\n').find((l) => l.trim().startsWith(scenario));
    t.match(line, /floor \d+\.\d+ {2}switchyard \d+\.\d+ {2}switchyard's own -?\d+\.\d+/, `${scenario}: both figures and the difference`);
  }
});
