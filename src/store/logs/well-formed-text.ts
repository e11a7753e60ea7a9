/**
 * Log text as the SQLite stores keep it: UTF-8, where a lone UTF-16 surrogate (valid in a
 * client's JSON string as `\ud800`) becomes U+FFFD. Applied to the memory store's records and
 * to every store's string filters, so that all stores store and match the same text.
 */
function wellFormed<T extends string | null | undefined>(value: T): T {
  return (typeof value === 'string' && !value.isWellFormed() ? value.toWellFormed() : value) as T;
}

/** A record's strings, nested ones included, made well-formed in place. */
export function wellFormedStrings<T>(value: T): T {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = wellFormedStrings(value[i]);
  } else if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) record[key] = wellFormedStrings(record[key]);
  } else if (typeof value === 'string') {
    return wellFormed(value);
  }
  return value;
}

/** A filter's text values as the stores keep text. */
export function wellFormedFilter<F extends { group_id?: string | undefined; model?: string | undefined }>(filter: F): F {
  const { group_id, model } = filter;
  return (group_id === undefined || group_id.isWellFormed()) && (model === undefined || model.isWellFormed()) ? filter : { ...filter, group_id: wellFormed(group_id), model: wellFormed(model) };
}
