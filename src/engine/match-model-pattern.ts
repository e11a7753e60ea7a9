const compiled = new Map<string, RegExp>();

/** Glob match of a model name (`*` matches any run of characters), case-insensitive. */
export function matchesModelPattern(model: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => toRegExp(p).test(model));
}

function toRegExp(pattern: string): RegExp {
  let re = compiled.get(pattern);
  if (!re) {
    re = new RegExp(`^${pattern.split('*').map(escape).join('.*')}$`, 'i');
    compiled.set(pattern, re);
  }
  return re;
}

function escape(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}
