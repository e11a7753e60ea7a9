// No imports: the store layer names a failing stored setting with these too, and does not
// depend on src/http's refusals.

/** A JSON pointer's (ajv's instancePath) segments, `~1` and `~0` decoded. */
export function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** A JSON pointer as a field name: dotted, list items as [i] (`/a/0/b` is `a[0].b`). */
export function pointerToField(pointer: string): string {
  return pointerSegments(pointer).reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : joinField(acc, seg)), '');
}

/** `name` under the field `base` ('' for the top). */
export function joinField(base: string, name: string): string {
  return base === '' ? name : `${base}.${name}`;
}
