import { ApiError } from '../http/api-error.ts';
import type { Clock } from '../store/clock.ts';
import { fetchJson } from './fetch-json.ts';

export type UpdateCheck =
  | { status: 'not_configured' }
  | { status: 'checked'; feed_url: string; checked_at: string; current: string; latest: string; update_available: boolean; release_url: string | null }
  | { status: 'unavailable'; feed_url: string; checked_at: string; reason: string };

const CACHE_MS = 3_600_000;

/**
 * The release update check of /api/system against a configurable feed. A feed is JSON: a
 * release `{version | tag_name, url | html_url}`, a list of releases, or `{releases: [...]}`;
 * the highest version wins. Results are cached for an hour; a failing feed is reported, not thrown.
 */
export class UpdateChecker {
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;
  readonly #current: string;
  #cache: { url: string; at: number; result: UpdateCheck } | undefined;

  constructor(fetchImpl: typeof fetch, clock: Clock, currentVersion: string) {
    this.#fetch = fetchImpl;
    this.#clock = clock;
    this.#current = currentVersion;
  }

  async check(feedUrl: string | null, refresh: boolean): Promise<UpdateCheck> {
    if (!feedUrl) return { status: 'not_configured' };
    const now = this.#clock();
    if (!refresh && this.#cache && this.#cache.url === feedUrl && now - this.#cache.at < CACHE_MS) return this.#cache.result;
    const checked_at = new Date(now).toISOString();
    let result: UpdateCheck;
    try {
      const latest = latestRelease(await fetchJson(this.#fetch, feedUrl));
      if (!latest) result = { status: 'unavailable', feed_url: feedUrl, checked_at, reason: 'feed_has_no_release' };
      else {
        result = {
          status: 'checked',
          feed_url: feedUrl,
          checked_at,
          current: this.#current,
          latest: latest.version,
          update_available: compareVersions(latest.version, this.#current) > 0,
          release_url: latest.url,
        };
      }
    } catch (err) {
      const reason = err instanceof ApiError ? String((err.data as { reason?: string } | undefined)?.reason ?? err.code) : 'feed_failed';
      result = { status: 'unavailable', feed_url: feedUrl, checked_at, reason };
    }
    this.#cache = { url: feedUrl, at: now, result };
    return result;
  }
}

interface Release {
  version: string;
  url: string | null;
}

function latestRelease(feed: unknown): Release | undefined {
  const entries = Array.isArray(feed) ? feed : isObject(feed) && Array.isArray(feed.releases) ? feed.releases : [feed];
  const releases = entries.flatMap((e: unknown): Release[] => {
    if (!isObject(e)) return [];
    const raw = typeof e.version === 'string' ? e.version : typeof e.tag_name === 'string' ? e.tag_name : undefined;
    const version = raw?.replace(/^v/, '');
    if (!version || parseVersion(version) === undefined) return [];
    const url = typeof e.url === 'string' ? e.url : typeof e.html_url === 'string' ? e.html_url : null;
    return [{ version, url }];
  });
  return releases.sort((a, b) => compareVersions(b.version, a.version))[0];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseVersion(v: string): [number, number, number, string] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] ?? ''] : undefined;
}

/** Semantic-version order; a pre-release sorts before its release. */
export function compareVersions(a: string, b: string): number {
  const pa = parseVersion(a.replace(/^v/, ''));
  const pb = parseVersion(b.replace(/^v/, ''));
  if (!pa || !pb) return 0;
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] as number) - (pb[i] as number);
  if (pa[3] === pb[3]) return 0;
  if (pa[3] === '') return 1;
  if (pb[3] === '') return -1;
  return pa[3] < pb[3] ? -1 : 1;
}
