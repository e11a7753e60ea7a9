import type { OperationEntry } from '../generated/index.ts';
import { isClientCredentialQueryName, withoutQueryParams } from '../upstream/index.ts';
import { DataPlaneError } from './data-plane-error.ts';

type ErrorStyle = OperationEntry['error_style'];

/** Google's response filter (`fields`, and its `$` alias): a mask without `usageMetadata` would hide the tokens used. */
const FIELD_MASK_PARAMS: ReadonlySet<string> = new Set(['fields', '$fields']);
const FORMAT_PARAMS = ['alt', '$alt'];
/** JSONP (`callback`, and its `$` alias): the answer comes wrapped in a script, its usage unread. */
const CALLBACK_PARAMS = ['callback', '$callback'];
/** The formats a generate-style answer's usage is read from: `proto` and `media` are not. */
const READABLE_FORMATS: ReadonlySet<string> = new Set(['json', 'sse']);

const isGenerateDropped = (name: string): boolean => isClientCredentialQueryName(name) || FIELD_MASK_PARAMS.has(name);

/**
 * Whether a query parameter, by its decoded name, stays with the gateway: a client credential
 * for every operation, and Google's response filter too for one in the generate style (the
 * client then gets the whole answer).
 */
export function droppedQueryName(style: ErrorStyle): (name: string) => boolean {
  return style === 'generate' ? isGenerateDropped : isClientCredentialQueryName;
}

/** Refuses, in the generate style, a response format (`alt`, `$alt`, a JSONP `callback`) whose usage could not be read. */
export function refuseUnreadableFormat(style: ErrorStyle, query: URLSearchParams): void {
  if (style !== 'generate') return;
  for (const name of CALLBACK_PARAMS) if (query.has(name)) throw new DataPlaneError('unsupported_response_format', `(${name})`);
  for (const name of FORMAT_PARAMS) {
    for (const value of query.getAll(name)) {
      if (!READABLE_FORMATS.has(value)) throw new DataPlaneError('unsupported_response_format', `(${name}=${value.slice(0, 32)})`);
    }
  }
}

/**
 * The query to forward (from its `?`, or '' for none) of a request whose query reads as
 * `query`: without what droppedQueryName keeps back, after refuseUnreadableFormat.
 */
export function forwardedQuery(style: ErrorStyle, search: string | undefined, query: URLSearchParams): string {
  if (search === undefined) return '';
  refuseUnreadableFormat(style, query);
  return withoutQueryParams(search, droppedQueryName(style));
}
