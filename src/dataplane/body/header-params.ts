export interface HeaderWithParams {
  /** Lowercased, e.g. `multipart/form-data` or `form-data`. */
  readonly type: string;
  /** Lowercased names; quoted values unescaped. */
  readonly params: ReadonlyMap<string, string>;
}

/** A parameter's name is a token (RFC 9110): a lenient parser could trim any other one to a name it knows. */
const PARAM = /\s*;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))\s*/y;

/**
 * `type; name=value; name="quoted \" value"` as in Content-Type and Content-Disposition.
 * Undefined when malformed (a parameter name that is not a token included) or when a parameter repeats: two names for one part would let the
 * gateway and the upstream read different fields.
 */
export function parseHeaderParams(value: string): HeaderWithParams | undefined {
  const semicolon = value.indexOf(';');
  const type = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  const params = new Map<string, string>();
  PARAM.lastIndex = semicolon === -1 ? value.length : semicolon;
  while (PARAM.lastIndex < value.length) {
    const match = PARAM.exec(value);
    if (match === null) return undefined;
    const name = match[1]!.toLowerCase();
    if (params.has(name)) return undefined;
    params.set(name, match[2] === undefined ? match[3]! : match[2].replace(/\\(.)/g, '$1'));
  }
  return type === '' ? undefined : { type, params };
}
