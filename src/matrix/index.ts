export { buildMatrix, type Matrix, type MatrixTable } from './build-matrix.ts';
export { renderMatrixMarkdown } from './render-matrix-markdown.ts';
