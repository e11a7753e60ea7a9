import { parseArgs } from 'node:util';
import { runCodegen } from '../../../codegen/index.ts';
import { repoRoot } from '../repo-root.ts';

export async function runCodegenCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { check: { type: 'boolean', default: false } }, strict: true });
  const result = await runCodegen(repoRoot(), values.check);
  if (values.check) {
    if (result.stale.length === 0) {
      process.stdout.write('codegen: src/generated is up to date\n');
      return 0;
    }
    process.stderr.write(`codegen --check: stale generated files (run npm run codegen):\n${result.stale.map((f) => `  ${f}`).join('\n')}\n`);
    return 1;
  }
  process.stdout.write(result.written.length ? `codegen: wrote ${result.written.join(', ')}\n` : 'codegen: nothing changed\n');
  return 0;
}
