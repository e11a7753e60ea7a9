import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { banner } from './banner.ts';
import { emitTypes } from './emit-types.ts';
import { emitChannelTable, emitDigest, emitProtocolTable } from './emit-tables.ts';
import { generateManagementTypes } from './management-types.ts';
import { ManifestError } from './manifest-problem.ts';
import { loadSchema } from './validate-schema.ts';
import { validateManifests } from './validate-manifests.ts';

export const GENERATED_DIR = 'src/generated';

/** Every generated file, keyed by its path relative to the repository root. */
export async function generateAll(root: string): Promise<Map<string, string>> {
  const { manifests, problems, unchecked } = validateManifests(root);
  if (!manifests) throw new ManifestError(problems, unchecked);
  const routeTableSchema = JSON.parse(readFileSync(path.join(root, 'codegen', 'route-table.schema.json'), 'utf8'));
  const files = new Map<string, string>([
    [`${GENERATED_DIR}/types/protocols-manifest.ts`, await emitTypes(loadSchema(root, 'protocols'), 'ProtocolsManifest', 'manifests/schemas/protocols.schema.json')],
    [`${GENERATED_DIR}/types/channels-manifest.ts`, await emitTypes(loadSchema(root, 'channels'), 'ChannelsManifest', 'manifests/schemas/channels.schema.json')],
    [`${GENERATED_DIR}/types/route-table.ts`, await emitTypes(routeTableSchema, 'RouteTables', 'codegen/route-table.schema.json')],
    [`${GENERATED_DIR}/protocol-table.ts`, emitProtocolTable(manifests)],
    [`${GENERATED_DIR}/channel-table.ts`, emitChannelTable(manifests)],
    [`${GENERATED_DIR}/manifest-digest.ts`, emitDigest(manifests)],
  ]);
  files.set(`${GENERATED_DIR}/index.ts`, emitIndex([...files.keys()]));
  for (const [rel, content] of await generateManagementTypes(root)) files.set(rel, content);
  return files;
}

// Each manifest type file declares its own `Mode`; re-export the route-table types whole and
// only the named declarations of the manifest types so the names do not collide.
function emitIndex(paths: string[]): string {
  const modules = paths
    .filter((p) => !p.includes('/types/'))
    .map((p) => `./${path.posix.relative(GENERATED_DIR, p)}`)
    .sort();
  return [
    banner('codegen/run-codegen.ts'),
    ...modules.map((m) => `export * from '${m}';`),
    `export type * from './types/route-table.ts';`,
    `export type { CapabilityDecl, ModelListDecl, ModelListStyle, OperationDecl } from './types/protocols-manifest.ts';`,
    `export type { CredentialFieldDecl, CredentialKindDecl, DialectDecl } from './types/channels-manifest.ts';`,
    '',
  ].join('\n');
}

export interface CodegenResult {
  written: string[];
  stale: string[];
}

/** Writes the generated files, or with `check` only reports those that differ from a fresh run. */
export async function runCodegen(root: string, check: boolean): Promise<CodegenResult> {
  const files = await generateAll(root);
  const existing = listFiles(path.join(root, GENERATED_DIR)).map((f) => path.posix.join(GENERATED_DIR, f));
  const stale = [
    ...[...files].filter(([rel, content]) => readOrNull(path.join(root, rel)) !== content).map(([rel]) => rel),
    ...existing.filter((rel) => !files.has(rel)),
  ].sort();
  if (check) return { written: [], stale };
  for (const rel of existing.filter((r) => !files.has(r))) rmSync(path.join(root, rel));
  for (const [rel, content] of files) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    if (readOrNull(path.join(root, rel)) !== content) writeFileSync(path.join(root, rel), content);
  }
  return { written: stale, stale: [] };
}

function readOrNull(file: string): string | null {
  return existsSync(file) ? readFileSync(file, 'utf8') : null;
}

function listFiles(dir: string, prefix = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(path.join(dir, e.name), path.posix.join(prefix, e.name)) : [path.posix.join(prefix, e.name)],
  );
}
