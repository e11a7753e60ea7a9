import type { ServerResponse } from 'node:http';
import type { ModelListStyle } from '../generated/index.ts';
import { visibleModelNames } from '../management/visibility.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import { generatePage, messagesPage } from './model-list-pages.ts';
import { withRequestId } from './request-id-headers.ts';

/**
 * The configured models visible to the calling key (note 12), in the shape the client's SDK
 * lists models, one page of it as the query's paging parameters ask (the completions list takes
 * none); no upstream is asked.
 */
export function modelListBody(style: ModelListStyle, key: AccessKeyRecord, groups: readonly GroupRecord[], query: URLSearchParams, createdAt: number): unknown {
  const names = visibleModelNames(key, groups);
  const entries = (page: readonly string[]) => page.map((id) => modelEntry(style, id, createdAt));
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
 * undefined when the key cannot see it.
 */
export function modelBody(style: ModelListStyle, model: string, key: AccessKeyRecord, groups: readonly GroupRecord[], createdAt: number): unknown {
  return visibleModelNames(key, groups).includes(model) ? modelEntry(style, model, createdAt) : undefined;
}

function modelEntry(style: ModelListStyle, id: string, createdAt: number): unknown {
  switch (style) {
    case 'completions':
      return { id, object: 'model', created: Math.floor(createdAt / 1000), owned_by: 'switchyard' };
    case 'messages':
      return { type: 'model', id, display_name: id, created_at: new Date(createdAt).toISOString() };
    case 'generate':
      return { name: `models/${id}`, baseModelId: id, displayName: id, supportedGenerationMethods: ['generateContent', 'countTokens'] };
  }
}

/** A list's answer in `style`: a messages one carries `request-id` too, the header the anthropic SDK reads. */
export function sendJson(res: ServerResponse, status: number, body: unknown, requestId: string, style: ModelListStyle): void {
  const text = JSON.stringify(body);
  res.writeHead(status, withRequestId({ 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }, requestId, style === 'messages'));
  res.end(text);
}
