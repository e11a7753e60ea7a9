import type { ServerResponse } from 'node:http';
import { OPERATIONS, PROTOCOLS, type ModelListStyle } from '../generated/index.ts';
import { groupsServingTo, visibleModelNames } from '../management/visibility.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import type { Snapshot } from './config-snapshot.ts';
import { generatePage, messagesPage } from './model-list-pages.ts';
import { anyIncluded, type RouteMemo } from './plan-candidates.ts';
import { templateVerb } from '../handlers/compile-route-table.ts';
import { withRequestId } from './request-id-headers.ts';

/** The configuration a model list reads: the Groups, and the Groups serving each external name. */
export type ModelCatalog = Pick<Snapshot, 'groups' | 'groupsByModel'>;

/**
 * The configured models visible to the calling key (note 12), in the shape the client's SDK
 * lists models, one page of it as the query's paging parameters ask (the completions list takes
 * none); no upstream is asked.
 */
export function modelListBody(style: ModelListStyle, key: AccessKeyRecord, catalog: ModelCatalog, query: URLSearchParams): unknown {
  const names = visibleModelNames(key, catalog.groups);
  // One memo for the page: its models' Groups mostly share channels and upstream names.
  const memo: RouteMemo = new Map();
  const entries = (page: readonly string[]) => page.map((id) => modelEntry(style, id, key, groupsServingTo(key, id, catalog.groupsByModel.get(id) ?? []), memo));
  switch (style) {
    case 'completions':
      return { object: 'list', data: entries(names) };
    case 'messages': {
      const page = messagesPage(names, query);
      return { data: entries(page.names), has_more: page.hasMore, first_id: page.names[0] ?? null, last_id: page.names[page.names.length - 1] ?? null };
    }
    case 'generate': {
      const page = generatePage(names, query);
      return { models: entries(page.names), ...(page.nextPageToken ? { nextPageToken: page.nextPageToken } : {}) };
    }
  }
}

/**
 * One visible model, as its entry in the list (what models.retrieve / models.get parse);
 * undefined when the key cannot see it. Only the Groups serving that name are looked at.
 */
export function modelBody(style: ModelListStyle, model: string, key: AccessKeyRecord, catalog: ModelCatalog): unknown {
  const serving = groupsServingTo(key, model, catalog.groupsByModel.get(model) ?? []);
  return serving.length === 0 ? undefined : modelEntry(style, model, key, serving, new Map());
}

/**
 * When a model was made available, as far as the configuration knows: the creation of the
 * earliest Group that serves it to the key (a model added to an older Group later carries
 * that Group's time), the same on every call; the Unix epoch when no Group's time reads,
 * as Anthropic dates a model whose release date is unknown.
 */
function createdAt(serving: readonly { created_at: string }[]): number {
  let earliest = Infinity;
  for (const g of serving) {
    const at = Date.parse(g.created_at);
    if (at < earliest) earliest = at;
  }
  return Number.isFinite(earliest) ? earliest : 0;
}

/**
 * The generate-style operations a model entry can name, each by its path's `:verb`, in manifest
 * order (generateContent, countTokens, embedContent, batchEmbedContents). A streaming twin is
 * left out: Google lists streamGenerateContent under generateContent, never by its own name.
 */
const GENERATION_METHODS = Object.values(PROTOCOLS).flatMap((protocol) => protocol.operations).flatMap((id) => {
  const op = OPERATIONS[id];
  const verb = templateVerb(op.path);
  return op.error_style === 'generate' && op.model === 'path' && op.stream !== 'always' && verb ? [{ op, verb }] : [];
});

/**
 * What genai's `supportedActions` filters on: the methods the key may call (its protocols) that
 * at least one of the Groups serving the model to it routes, as a call would be routed: an
 * x-embeddings Group's model lists embedContent, not generateContent. Empty, never absent, for
 * a model no such Group serves: the SDKs' snippets iterate the list.
 */
function generationMethods(key: AccessKeyRecord, model: string, serving: readonly GroupRecord[], memo: RouteMemo): string[] {
  return GENERATION_METHODS.filter(
    ({ op }) => key.protocols.includes(op.protocol) && anyIncluded({ protocol: op.protocol, operation: op.id, model, key, groups: serving }, memo),
  ).map(({ verb }) => verb);
}

function modelEntry(style: ModelListStyle, id: string, key: AccessKeyRecord, serving: readonly GroupRecord[], memo: RouteMemo): unknown {
  switch (style) {
    case 'completions':
      return { id, object: 'model', created: Math.floor(createdAt(serving) / 1000), owned_by: 'switchyard' };
    case 'messages':
      // Every field the anthropic SDK's ModelInfo declares: a configured model is active, and
      // what the gateway cannot know (its line, capabilities, token limits, a deprecation) is null.
      return {
        type: 'model',
        id,
        display_name: id,
        created_at: new Date(createdAt(serving)).toISOString(),
        lifecycle: 'active',
        deprecated_at: null,
        retires_at: null,
        line: null,
        capabilities: null,
        max_input_tokens: null,
        max_tokens: null,
      };
    case 'generate':
      return { name: `models/${id}`, baseModelId: id, displayName: id, supportedGenerationMethods: generationMethods(key, id, serving, memo) };
  }
}

/** A list's answer in `style`: a messages one carries `request-id` too, the header the anthropic SDK reads. */
export function sendJson(res: ServerResponse, status: number, body: unknown, requestId: string, style: ModelListStyle): void {
  const text = JSON.stringify(body);
  res.writeHead(status, withRequestId({ 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }, requestId, style === 'messages'));
  res.end(text);
}
