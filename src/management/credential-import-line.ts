import { ApiError, validationFailed } from '../http/api-error.ts';
import type { CredentialKindDecl } from '../generated/index.ts';
import type { GroupRecord } from '../store/records.ts';
import { completeCredentialValues } from './channel-rules.ts';

/**
 * The values of one import line (`lineNumber` counts the lines that carry a credential, as the
 * import's answer does). A line of a kind with several fields that starts with `{` is the JSON
 * object the text download writes, checked like connect checks its fields; any other line is
 * the secret itself, the rest coming from `fields` and the Group.
 */
export function importLineValues(
  kind: CredentialKindDecl,
  secretField: string,
  line: string,
  lineNumber: number,
  common: Record<string, string>,
  group: GroupRecord,
): Record<string, string> {
  try {
    if (kind.fields.length === 1 || !line.startsWith('{')) return completeCredentialValues(kind, { ...common, [secretField]: line }, group);
    return completeCredentialValues(kind, { ...common, ...jsonLineFields(kind, line) }, group, 'credentials');
  } catch (err) {
    // The field names alone do not say which of thousands of lines is wrong, plain or JSON.
    if (err instanceof ApiError && err.code === 'VALIDATION_FAILED') throw new ApiError(err.code, { data: { ...(err.data as object), line: lineNumber } });
    throw err;
  }
}

/** Unknown names are left for completeCredentialValues to refuse. */
function jsonLineFields(kind: CredentialKindDecl, line: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw validationFailed('credentials', 'not_a_json_object');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw validationFailed('credentials', 'not_a_json_object');
  for (const [name, value] of Object.entries(parsed)) {
    if (kind.fields.some((f) => f.name === name) && typeof value !== 'string') throw validationFailed(`credentials.${name}`, 'wrong_type', { expected: 'string' });
  }
  return parsed as Record<string, string>;
}
