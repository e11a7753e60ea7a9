import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument, isMap, isSeq, isPair, isScalar, type Document, type Node } from 'yaml';
import type { ManifestProblem } from './manifest-problem.ts';

export type FieldPath = readonly (string | number)[];

/** A parsed manifest that can say where any of its fields stands in the source. */
export interface LoadedManifest {
  file: string;
  source: string;
  data: unknown;
  problemAt(fieldPath: FieldPath, message: string, pointAtKey?: boolean): ManifestProblem;
}

export function fieldName(fieldPath: FieldPath): string {
  return fieldPath.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
}

export function loadManifest(root: string, relativeFile: string): { manifest?: LoadedManifest; problems: ManifestProblem[] } {
  const source = readFileSync(path.join(root, relativeFile), 'utf8');
  return parseManifest(relativeFile, source);
}

export function parseManifest(file: string, source: string): { manifest?: LoadedManifest; problems: ManifestProblem[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const problems: ManifestProblem[] = doc.errors.map((e) => {
    const pos = lineCounter.linePos(e.pos[0]);
    return { file, line: pos.line, column: pos.col, field: '(yaml)', message: e.message.split('\n')[0] ?? e.message };
  });
  if (problems.length > 0) return { problems };
  const manifest: LoadedManifest = {
    file,
    source,
    data: doc.toJS(),
    problemAt(fieldPath, message, pointAtKey = false) {
      const offset = locate(doc, fieldPath, pointAtKey);
      const pos = lineCounter.linePos(offset);
      return { file, line: pos.line, column: pos.col, field: fieldName(fieldPath) || '(root)', message };
    },
  };
  return { manifest, problems };
}

/** Offset of the deepest node on the path that exists (the key itself when pointAtKey). */
function locate(doc: Document, fieldPath: FieldPath, pointAtKey: boolean): number {
  let node: unknown = doc.contents;
  let offset = (doc.contents as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < fieldPath.length; i++) {
    const part = fieldPath[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(part));
      if (!pair) break;
      const key = pair.key as Node;
      const value = pair.value as Node | null;
      const last = i === fieldPath.length - 1;
      offset = (last && pointAtKey ? key.range?.[0] : (value?.range?.[0] ?? key.range?.[0])) ?? offset;
      node = value;
    } else if (isSeq(node) && typeof part === 'number') {
      const item = node.items[part] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset;
}
