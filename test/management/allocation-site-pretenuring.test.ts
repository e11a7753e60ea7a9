import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The server turns V8's allocation-site pretenuring off for its process: under streaming load
// it could leave a process promoting every request's short-lived objects (see
// docs/data-plane-internals.md). The probe shows the decision V8 makes with and without it.

const probe = fileURLToPath(new URL('./support/pretenuring-probe.ts', import.meta.url));

async function freshObjectIsYoung(args: string[]): Promise<boolean> {
  const flags = ['--allow-natives-syntax', '--expose-gc', '--min-semi-space-size=1', '--max-semi-space-size=1'];
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, '--import=tsx', probe, ...args], { timeout: 60_000 });
  return (JSON.parse(stdout) as { young: boolean }).young;
}

t.test('without the server, V8 pretenures a site whose objects all survive (the probe works)', async (t) => {
  t.equal(await freshObjectIsYoung([]), false);
});

t.test('in a process that started a server, the same site still allocates young objects', async (t) => {
  t.equal(await freshObjectIsYoung(['server']), true);
});
