import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { banner } from './banner.ts';

/** TypeScript declarations for a JSON Schema, with every definition emitted and no index signatures added. */
export async function emitTypes(schema: Record<string, unknown>, name: string, sourceLabel: string): Promise<string> {
  const body = await compile(schema as JSONSchema, name, {
    bannerComment: '',
    additionalProperties: false,
    unreachableDefinitions: true,
    declareExternallyReferenced: true,
    strictIndexSignatures: true,
    cwd: process.cwd(),
    style: { singleQuote: true, printWidth: 110 },
  });
  return `${banner(sourceLabel)}\n${body.trimStart()}`;
}
