import { OPERATIONS } from '../../generated/index.ts';

/**
 * Body members naming a stored object (a continued response's `previous_response_id`, speech's
 * `voice_id`): the manifest's `resource.body_field`s, which handle-data-request.ts reads to
 * route the request to the object's holder and refuse another key's. Read from a spooled body
 * too, and held to one copy, or a large or doubled body would step around that check.
 */
const RESOURCE_BODY_FIELDS: readonly string[] = Object.values(OPERATIONS).flatMap((op) => op.resource?.body_field ?? []);

/**
 * Top-level members (or form fields) routing reads: request-features.ts, and
 * handle-data-request.ts's background and stored-object fields. Small values.
 */
export const ROUTING_SMALL_MEMBERS: readonly string[] = [...new Set(['stream', 'n', 'response_format', 'previous_response_id', 'conversation', 'background', ...RESOURCE_BODY_FIELDS])];
/** Members whose kind routing reads (text, token ids, other); their values may be large. */
export const ROUTING_INPUT_MEMBERS: readonly string[] = ['input', 'query', 'documents'];
