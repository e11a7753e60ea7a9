import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { banner } from './banner.ts';

export const MANAGEMENT_SCHEMA_DIR = 'src/management/schemas';
export const MANAGEMENT_TYPES_DIR = 'src/generated/management';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * TypeScript types of the management request bodies, one file per JSON Schema in
 * src/management/schemas, keyed by path relative to the repository root. Deterministic:
 * files in name order, no timestamps.
 */
export async function generateManagementTypes(root: string = REPO_ROOT): Promise<Map<string, string>> {
  const dir = path.join(root, MANAGEMENT_SCHEMA_DIR);
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  const files = new Map<string, string>();
  for (const file of names) {
    const schema = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as JSONSchema;
    const body = await compile(stripCustomKeywords(schema), String(schema.title), {
      bannerComment: '',
      additionalProperties: false,
      strictIndexSignatures: true,
      declareExternallyReferenced: true,
      cwd: dir,
      style: { singleQuote: true, printWidth: 110 },
    });
    const out = `${MANAGEMENT_TYPES_DIR}/${file.replace(/\.json$/, '.ts')}`;
    files.set(out, `${banner(`${MANAGEMENT_SCHEMA_DIR}/${file}`)}\n${body.trimStart()}`);
  }
  return files;
}

// `x-known` names a value set checked at run time; it has no TypeScript meaning.
function stripCustomKeywords(value: JSONSchema): JSONSchema {
  return JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === 'x-known' ? undefined : v))) as JSONSchema;
}
