import { ApiError, notFound, validationFailed } from '../http/api-error.ts';
import type { ManagementContext } from './context.ts';

/** A numeric id from the path; anything else names no resource, so 404. */
export function idParam(ctx: ManagementContext, name: string, resource: string): number {
  const raw = ctx.params[name] ?? '';
  const id = /^[1-9][0-9]{0,14}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id)) throw notFound(resource, raw);
  return id;
}

export function stringParam(ctx: ManagementContext, name: string): string {
  const value = ctx.params[name];
  if (value === undefined) throw new ApiError('ROUTE_NOT_FOUND');
  return value;
}

/** One query value; onlyQuery, run before every handler (build-router.ts), has refused a repeated one. */
export function queryString(ctx: ManagementContext, name: string): string | undefined {
  const v = ctx.query[name] as string | undefined;
  return v === undefined || v === '' ? undefined : v;
}

export function queryInt(ctx: ManagementContext, name: string, min: number, max: number): number | undefined {
  const raw = queryString(ctx, name);
  if (raw === undefined) return undefined;
  const n = /^-?[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw validationFailed(name, 'invalid_value', { minimum: min, maximum: max });
  return n;
}

/**
 * ISO 8601: a date, or a date and time with an optional zone. A space where the zone's sign
 * goes is a `+`: a query string decodes a `+` typed as is (`curl '...from=...T08:00+08:00'`)
 * into a space.
 */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+ -])(\d{2}):(\d{2}))?)?$/;

/** The last time a JavaScript Date holds (ECMA-262 §21.4.1.1). */
const MAX_TIME_MS = 8.64e15;

/** A time bound given as epoch milliseconds or an ISO 8601 date-time. */
export function queryTime(ctx: ManagementContext, name: string): number | undefined {
  const raw = queryString(ctx, name);
  if (raw === undefined) return undefined;
  // Not Date.parse on anything: it reads "-5" or "March 7" as dates of 2001.
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : isoTime(raw);
  // Past the last time a Date holds, a number names no time (and past 2^53 it is rounded, so its echo would differ).
  if (!Number.isFinite(n) || n > MAX_TIME_MS) throw validationFailed(name, 'invalid_value', { expected: 'epoch milliseconds or ISO 8601' });
  return n;
}

/** `from` and `to` of a read; a `to` before `from` is a mistake, not a range with nothing in it. */
export function queryTimeRange(ctx: ManagementContext): { from: number | undefined; to: number | undefined } {
  const from = queryTime(ctx, 'from');
  const to = queryTime(ctx, 'to');
  if (from !== undefined && to !== undefined && to < from) throw validationFailed('to', 'before_from', { from, to });
  return { from, to };
}

/** A page cursor as handed out: none is ever empty, so an empty one is refused like any other, not read as absent. */
export function queryCursor(ctx: ManagementContext, name: string): string | undefined {
  const raw = ctx.query[name] as string | undefined;
  if (raw === '') throw validationFailed(name, 'invalid_value');
  return raw;
}

/**
 * An ISO 8601 time, or NaN when it names no such time. Without a zone it is UTC, a time as
 * well as a date: the server's own zone is nothing a caller can see. The fields are read back
 * from the time they make, since Date rolls "2026-02-30" over to March 2 and "T24:00" to the next day.
 */
function isoTime(raw: string): number {
  const m = ISO_8601.exec(raw);
  if (m === null) return NaN;
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', zone, sign, zoneHours = '0', zoneMinutes = '0'] = m;
  if (Number(zoneHours) > 23 || Number(zoneMinutes) > 59) return NaN;
  const given = [year, month, day, hour, minute, second].map(Number) as [number, number, number, number, number, number];
  // setUTCFullYear, not Date.UTC, which reads years 0 to 99 as 1900 to 1999.
  const wall = new Date(0);
  wall.setUTCFullYear(given[0], given[1] - 1, given[2]);
  wall.setUTCHours(given[3], given[4], given[5], Number(fraction.slice(0, 3).padEnd(3, '0')));
  const read = [wall.getUTCFullYear(), wall.getUTCMonth() + 1, wall.getUTCDate(), wall.getUTCHours(), wall.getUTCMinutes(), wall.getUTCSeconds()];
  if (!given.every((v, i) => v === read[i])) return NaN;
  const offset = zone === undefined || zone === 'Z' ? 0 : (sign === '-' ? -1 : 1) * (Number(zoneHours) * 60 + Number(zoneMinutes));
  return wall.getTime() - offset * 60_000;
}

export function queryEnum<T extends string>(ctx: ManagementContext, name: string, allowed: readonly T[]): T | undefined {
  const raw = queryString(ctx, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw validationFailed(name, 'invalid_value', { allowed });
  return raw as T;
}

/**
 * Rejects query parameters the operation does not know, as bodies reject unknown fields, and
 * repeated ones, whether or not the operation reads them on this request.
 */
export function onlyQuery(ctx: ManagementContext, known: readonly string[]): void {
  for (const [name, value] of Object.entries(ctx.query)) {
    if (!known.includes(name)) throw validationFailed(name, 'unknown_field');
    if (Array.isArray(value)) throw validationFailed(name, 'repeated');
  }
}
