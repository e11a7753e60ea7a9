/**
 * How each native dialect lists its models (DISC, note 12): the path, the header carrying the
 * key, extra headers, where the ids are in the answer, and how the list goes on to its next
 * page. Data, keyed by dialect.
 *
 * Paging, per each API's list call: completions-style lists that page (OpenAI's cursor pages)
 * say `has_more` and take `after=<last id>`; messages-style (`GET /v1/models`) says `has_more`
 * and `last_id` and takes `after_id`; generate-style (`GET /v1beta/models`) gives
 * `nextPageToken`, absent on the last page, and takes `pageToken`. No page size is sent: each
 * upstream's default applies, so the first request is the same plain list call as ever.
 * Deployment style (`GET {endpoint}/openai/models?api-version=...`, "Models - List") answers
 * `{object: 'list', data: [{id, ...}]}` in one piece and takes no cursor: `paging` null.
 * `bareList`: an answer that is itself the array of models is the whole list (some
 * completions-compatible upstreams answer `GET /v1/models` so, Together's among them).
 * `omitsEmptyList`: the answer is proto3 JSON, which leaves an empty list out, so a page of no
 * models is `{}` (or only the next page's token).
 */
export const DISCOVERY_DIALECTS = {
  completions: {
    path: '/v1/models',
    query: {},
    keyHeader: 'authorization',
    bearer: true,
    extraHeaders: {},
    list: 'data',
    bareList: true,
    omitsEmptyList: false,
    id: 'id',
    stripPrefix: '',
    paging: { more: 'has_more', cursor: 'last_id', lastItemIsCursor: true, cursorParam: 'after' },
  },
  messages: {
    path: '/v1/models',
    query: {},
    keyHeader: 'x-api-key',
    bearer: false,
    extraHeaders: { 'anthropic-version': '2023-06-01' },
    list: 'data',
    bareList: false,
    omitsEmptyList: false,
    id: 'id',
    stripPrefix: '',
    paging: { more: 'has_more', cursor: 'last_id', lastItemIsCursor: true, cursorParam: 'after_id' },
  },
  generate: {
    path: '/v1beta/models',
    query: {},
    keyHeader: 'x-goog-api-key',
    bearer: false,
    extraHeaders: {},
    list: 'models',
    bareList: false,
    omitsEmptyList: true,
    id: 'name',
    stripPrefix: 'models/',
    paging: { more: null, cursor: 'nextPageToken', lastItemIsCursor: false, cursorParam: 'pageToken' },
  },
  deployment: {
    path: '/openai/models',
    // decisions.md §4 leaves the api-version open: the vendor's current GA data-plane version.
    query: { 'api-version': '2024-10-21' },
    keyHeader: 'api-key',
    bearer: false,
    extraHeaders: {},
    list: 'data',
    bareList: false,
    omitsEmptyList: false,
    id: 'id',
    stripPrefix: '',
    paging: null,
  },
} as const;

export type DiscoveryDialect = keyof typeof DISCOVERY_DIALECTS;

/**
 * Channels with no native conversation route list models in the dialect of the wire their
 * converted routes go through (the manifest's `wire`), when that wire has a list call of its
 * own; any other wire lists completions style.
 */
export const DISCOVERY_DIALECT_OF_WIRE: Readonly<Record<string, DiscoveryDialect>> = {
  'deployment-completions': 'deployment',
};

/** Pages read at most for one discovery; an upstream still saying "more" then gives a truncated list. */
export const MAX_DISCOVERY_PAGES = 50;

/**
 * Bytes one list page may have. The answer is read whole before it is parsed, so an upstream
 * that streams without end would otherwise fill the gateway's memory; past this the list call
 * is aborted. The longest real lists are well under 1 MiB; parsing a page holds the event loop
 * (the data plane's calls wait), so the cap leaves them room and no more.
 */
export const MAX_DISCOVERY_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * How deep a page may nest arrays and objects. A real list is three deep (the answer, its list,
 * a model) with a few more inside a model's details; a page of a few MiB nested thousands deep
 * takes JSON.parse seconds, so a deeper one is refused before it is parsed.
 */
export const MAX_DISCOVERY_PAGE_DEPTH = 32;

/**
 * Models one discovery lists at most, and the UTF-8 bytes of their ids together; the first id
 * past either ends the list there, `truncated`. The largest real catalogs have a few thousand
 * ids of well under 100 bytes; the caps keep the answer, built and serialized whole, a few MiB
 * whatever the upstream sends over its pages (50 pages of 4 MiB would otherwise be held at once).
 */
export const MAX_DISCOVERED_MODELS = 10_000;
export const MAX_DISCOVERED_ID_BYTES = 4 * 1024 * 1024;
