import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { fieldName, type LoadedManifest, type FieldPath } from './load-manifest.ts';
import type { ManifestProblem } from './manifest-problem.ts';

export function loadSchema(root: string, name: 'protocols' | 'channels'): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(root, 'manifests', 'schemas', `${name}.schema.json`), 'utf8'));
}

/** Validates a manifest against its JSON Schema and turns every ajv error into a located problem. */
export function validateAgainstSchema(manifest: LoadedManifest, schema: Record<string, unknown>): ManifestProblem[] {
  const ajv = new Ajv({ allErrors: true, discriminator: true, strict: false });
  const validate = ajv.compile(schema);
  if (validate(manifest.data)) return [];
  return (validate.errors ?? []).filter(isReportable).map((e) => toProblem(manifest, e));
}

// oneOf/if wrappers repeat what their branch errors already say.
function isReportable(e: ErrorObject): boolean {
  return e.keyword !== 'oneOf' && e.keyword !== 'if';
}

function toProblem(manifest: LoadedManifest, e: ErrorObject): ManifestProblem {
  const at = pointerToPath(e.instancePath);
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      return manifest.problemAt([...at, key], `unknown key "${key}"`, true);
    }
    case 'required': {
      const key = String((e.params as { missingProperty: string }).missingProperty);
      return { ...manifest.problemAt(at, `missing required key "${key}"`), field: fieldName([...at, key]) };
    }
    case 'enum': {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
      const isMode = allowed.includes('N/C');
      const what = isMode ? 'mode symbol' : 'value';
      return manifest.problemAt(at, `${what} ${JSON.stringify(valueAt(manifest.data, at))} is not one of ${allowed.join(', ')}`);
    }
    default:
      return manifest.problemAt(at, e.message ?? e.keyword);
  }
}

function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function valueAt(data: unknown, at: FieldPath): unknown {
  return at.reduce<unknown>((v, p) => (v && typeof v === 'object' ? (v as Record<string | number, unknown>)[p] : undefined), data);
}
