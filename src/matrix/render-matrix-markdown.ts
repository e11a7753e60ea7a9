import type { Matrix, MatrixTable } from './build-matrix.ts';

/** Both tables in the specification's markdown layout, so the two can be diffed. */
export function renderMatrixMarkdown(matrix: Matrix): string {
  return `${renderTable(matrix.core)}\n\n${renderTable(matrix.additional)}\n`;
}

function renderTable(t: MatrixTable): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(t.columns), `|${t.columns.map(() => '---').join('|')}|`, ...t.rows.map(line)].join('\n');
}
