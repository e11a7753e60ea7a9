import { parseArgs } from 'node:util';
import { buildMatrix, renderMatrixMarkdown } from '../../matrix/index.ts';
import { CliError } from '../cli-error.ts';

export function runMatrix(argv: string[]): number {
  const { values } = parseArgs({ args: argv, options: { format: { type: 'string', default: 'markdown' } }, strict: true });
  const matrix = buildMatrix();
  if (values.format === 'json') process.stdout.write(`${JSON.stringify(matrix, null, 2)}\n`);
  else if (values.format === 'markdown') process.stdout.write(renderMatrixMarkdown(matrix));
  else throw new CliError(`--format must be markdown or json, not "${values.format}"`);
  return 0;
}
