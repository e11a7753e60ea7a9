import type { ServerResponse } from 'node:http';
import type { ModelListDecl } from '../generated/index.ts';
import { visibleModelNames } from '../management/visibility.ts';
import type { AccessKeyRecord, GroupRecord } from '../store/records.ts';
import { withRequestId } from './request-id-headers.ts';

/**
 * The configured models visible to the calling key (note 12), in the shape the client's SDK
 * lists models; no upstream is asked.
 */
export function modelListBody(list: ModelListDecl, useAlternate: boolean, key: AccessKeyRecord, groups: readonly GroupRecord[], createdAt: number): unknown {
  const names = visibleModelNames(key, groups);
  const style = useAlternate && list.alternate ? list.alternate.style : list.style;
  const created = Math.floor(createdAt / 1000);
  switch (style) {
    case 'completions':
      return { object: 'list', data: names.map((id) => ({ id, object: 'model', created, owned_by: 'switchyard' })) };
    case 'messages':
      return {
        data: names.map((id) => ({ type: 'model', id, display_name: id, created_at: new Date(createdAt).toISOString() })),
        has_more: false,
        first_id: names[0] ?? null,
        last_id: names[names.length - 1] ?? null,
      };
    case 'generate':
      return { models: names.map((id) => ({ name: `models/${id}`, baseModelId: id, displayName: id, supportedGenerationMethods: ['generateContent', 'countTokens'] })) };
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, requestId: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, withRequestId({ 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }, requestId));
  res.end(text);
}
