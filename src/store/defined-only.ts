/** The object without its undefined-valued entries: "not submitted" must not overwrite a stored value. */
export function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
